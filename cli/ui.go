package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ui"
)

// uiTry is the command line ui wants.
const uiTry = "mcp-sqlite-memory ui --db memory.db [--addr 127.0.0.1:0]"

// uiCmd serves the person's read-only view on a loopback address until
// SIGINT or SIGTERM, and prints its URL with a one-time secret.
func uiCmd(ctx context.Context, args []string, env Env) error {
	cfg, addr, found, err := configWithFlag(args, env, "addr", uiTry)
	if err != nil {
		return err
	}
	if !found {
		addr = "127.0.0.1:0"
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	if err := ui.CheckLoopback(addr); err != nil {
		return &config.UsageError{Msg: err.Error() + "\nTry: " + uiTry}
	}
	log := newLogger(env, cfg.Verbose)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{status: exitUsage, msg: fmt.Sprintf("cannot listen on %s: %v", addr, err)}
	}
	defer ln.Close()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		return &config.UsageError{Msg: fmt.Sprintf("--addr %s resolved to %s, not a loopback address\nTry: %s", addr, ip, uiTry)}
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	login, secret, err := ui.NewLogin(port)
	if err != nil {
		return err
	}
	view, err := ui.New(ctx, ui.Options{
		DB: cfg.DB, SnapshotDir: cfg.SnapshotDir, Stem: config.Stem(cfg.DB),
		Hosts: ui.LoopbackHosts(ln.Addr()), Authorized: login.Authorized, Login: login, Log: log,
	})
	if err != nil {
		return &exitError{status: exitUsage, msg: fmt.Sprintf("%s: %v (ui shows an existing memory database, the file a server's --db names)", cfg.DB, err)}
	}
	defer view.Close()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	srv := &http.Server{
		Handler:           view.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.StandardLogger(nil),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(env.Stdout, "The read-only view of %s is at (open it once; the secret is traded for a cookie):\n    %s\n",
		view.Path(), login.URL("http://"+ln.Addr().String(), secret))
	log.Info("ui serving; stop with Ctrl-C", "addr", ln.Addr().String())
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	return nil
}
