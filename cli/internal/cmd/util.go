package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// withTimeout bounds a command by --timeout.
func withTimeout(cmd *cobra.Command, g *globals) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.timeout)
}
