package main

import (
	"fmt"
	"io"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

func init() {
	register(command{
		name:    "recipes",
		summary: "list the lock recipes with one-line descriptions",
		usage:   "Usage: zklab recipes\n\nLists every recipe by its canonical name; flawed variants are marked.\n",
		run:     runRecipes,
	})
}

func runRecipes(args []string, stdout, stderr io.Writer) error {
	c := find("recipes")
	fs := newFlags(c)
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	for _, r := range recipes.Recipes() {
		mark := ""
		if r.Flawed() {
			mark = " [flawed]"
		}
		fmt.Fprintf(stdout, "%-17s %s%s\n", r.Name, r.Summary, mark)
	}
	return nil
}

// lookupRecipe finds a recipe or returns a usage error naming the choices.
func lookupRecipe(name string) (recipes.Recipe, error) {
	r, ok := recipes.Lookup(name)
	if !ok {
		return recipes.Recipe{}, usagef("unknown recipe %s (known: %v)", scenarios.Cut(name), recipes.Names())
	}
	return r, nil
}
