package main

import (
	"fmt"
	"html/template"
	"os"
	"slices"
)

// writeHerdHTML writes a self-contained page with an SVG plot of
// notifications against clients, one line per recipe.
func writeHerdHTML(path string, results []herdResult) error {
	type point struct{ X, Y float64 }
	type series struct {
		Recipe string
		Color  string
		Points []point
		Path   string
	}
	const w, h, pad = 640.0, 400.0, 50.0
	maxX, maxY := 1, 1
	var names []string
	for _, r := range results {
		maxX = max(maxX, r.Clients)
		maxY = max(maxY, r.Notifications)
		if !slices.Contains(names, r.Recipe) {
			names = append(names, r.Recipe)
		}
	}
	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}
	var all []series
	for i, name := range names {
		s := series{Recipe: name, Color: colors[i%len(colors)]}
		for _, r := range results {
			if r.Recipe != name {
				continue
			}
			p := point{pad + float64(r.Clients)/float64(maxX)*(w-2*pad), h - pad - float64(r.Notifications)/float64(maxY)*(h-2*pad)}
			s.Points = append(s.Points, p)
			if s.Path == "" {
				s.Path = fmt.Sprintf("M%.1f %.1f", p.X, p.Y)
			} else {
				s.Path += fmt.Sprintf(" L%.1f %.1f", p.X, p.Y)
			}
		}
		all = append(all, s)
	}
	page := template.Must(template.New("herd").Parse(herdPage))
	f, err := os.Create(path)
	if err != nil {
		return usagef("--html: %v", err)
	}
	defer f.Close()
	return page.Execute(f, map[string]any{
		"W": w, "H": h, "Pad": pad, "MaxX": maxX, "MaxY": maxY, "Series": all, "Results": results,
	})
}

const herdPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>zklab herd</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style>
</head><body>
<h1>The herd effect</h1>
<p>Watch notifications delivered until every client has held the lock.</p>
<svg id="plot" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" xmlns="http://www.w3.org/2000/svg">
<line x1="{{.Pad}}" y1="{{.Pad}}" x2="{{.Pad}}" y2="350" stroke="black"/>
<line x1="{{.Pad}}" y1="350" x2="590" y2="350" stroke="black"/>
<text x="320" y="390" text-anchor="middle">clients (max {{.MaxX}})</text>
<text x="15" y="200" transform="rotate(-90 15 200)" text-anchor="middle">notifications (max {{.MaxY}})</text>
{{range .Series}}<path class="series" data-recipe="{{.Recipe}}" d="{{.Path}}" fill="none" stroke="{{.Color}}" stroke-width="2"/>
{{$c := .Color}}{{range .Points}}<circle cx="{{.X}}" cy="{{.Y}}" r="3" fill="{{$c}}"/>{{end}}
{{end}}
</svg>
<ul>{{range .Series}}<li style="color:{{.Color}}">{{.Recipe}}</li>{{end}}</ul>
<table><tr><th>recipe</th><th>clients</th><th>releases</th><th>notifications</th><th>getChildren</th><th>bytes</th></tr>
{{range .Results}}<tr><td>{{.Recipe}}</td><td>{{.Clients}}</td><td>{{.Releases}}</td><td>{{.Notifications}}</td><td>{{.GetChildren}}</td><td>{{.BytesReturned}}</td></tr>{{end}}
</table></body></html>
`
