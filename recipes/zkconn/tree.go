package zkconn

import (
	"context"

	"github.com/zklab/zklab/recipes"
)

// DeleteTree removes root and everything under it, depth first. It is
// for tidying up after a run: it gives up on a node it cannot list or
// delete and goes on with the rest (a crashed client's ephemeral nodes,
// for one, stay until its session expires, and so does their parent).
func DeleteTree(ctx context.Context, c recipes.Conn, root string) {
	kids, _, err := c.Children(ctx, root)
	if err != nil {
		return
	}
	for _, k := range kids {
		DeleteTree(ctx, c, root+"/"+k)
	}
	_ = c.Delete(ctx, root, -1)
}
