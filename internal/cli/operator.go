package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer/internal/api"
)

// bindAdmin adds --admin, the operator listener (SPEC §7), to a command
// that serves the API.
func bindAdmin(cmd *cobra.Command, c *config) {
	cmd.Flags().StringVar(&c.adminAddr, "admin", env("PACER_ADMIN_ADDR", api.DefaultAdminAddr),
		`operator listener address (the operator's page, the admin API, full metrics), "" for none [PACER_ADMIN_ADDR]`)
}

// adminFlagSet says the operator chose the operator listener's address.
func adminFlagSet(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("admin")
	return f != nil && f.Changed || env("PACER_ADMIN_ADDR", "") != ""
}

// serveOperator starts the operator listener beside the public one. An
// address that is not loopback needs PACER_OPERATOR_TOKEN. When the
// default address is taken (another pacer on this host), the listener is
// skipped with an error in the log rather than the process failing; an
// address the operator chose must work.
func (c *config) serveOperator(ctx context.Context, g *errgroup.Group, o stackOptions, h *api.Server, log *zap.Logger) error {
	if o.admin == "" {
		return nil
	}
	if err := checkAdminAddr(o.admin, len(c.operatorTokens) > 0); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.admin)
	if err != nil {
		if !o.adminSet && errors.Is(err, syscall.EADDRINUSE) {
			log.Error("admin.not_listening", zap.String("addr", o.admin), zap.Error(err),
				zap.String("hint", "set PACER_ADMIN_ADDR (--admin) to a free address to serve the operator's page"))
			return nil
		}
		return fmt.Errorf("operator listener (PACER_ADMIN_ADDR): %w", err)
	}
	alog := log.Named("admin")
	if len(c.operatorTokens) == 0 {
		alog.Warn("admin.open", zap.String("addr", o.admin),
			zap.String("hint", "no PACER_OPERATOR_TOKEN: anyone who reaches this address is an operator"))
	}
	g.Go(func() error { return api.ServeListener(ctx, ln, h.Operator(), alog) })
	return nil
}

// checkAdminAddr refuses an operator listener open to the network without
// a token.
func checkAdminAddr(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("PACER_ADMIN_ADDR (--admin) %q: %v", addr, err)
	}
	if haveToken || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return usagef("PACER_ADMIN_ADDR (--admin) %q is not a loopback address: set PACER_OPERATOR_TOKEN, or listen on 127.0.0.1", addr)
}
