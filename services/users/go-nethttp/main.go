// Command users serves the `users` scenario: a tiny user registry on SQLite,
// using net/http and zombiezen.com/go/sqlite (pure Go, pooled connections).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

const schema = `CREATE TABLE IF NOT EXISTS users (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	name TEXT,
	UNIQUE(name)
);`

type server struct {
	db *sqlitex.Pool
}

// name returns the trimmed `name` query parameter, writing 400 when it is empty.
func name(w http.ResponseWriter, r *http.Request) (string, bool) {
	n := strings.TrimSpace(r.URL.Query().Get("name"))
	if n == "" {
		http.Error(w, "Invalid 'name' given: it must not be empty", http.StatusBadRequest)
		return "", false
	}
	return n, true
}

func (s *server) lookup(w http.ResponseWriter, r *http.Request) {
	n, ok := name(w, r)
	if !ok {
		return
	}
	conn, err := s.db.Take(r.Context())
	if err != nil {
		http.Error(w, "Database unavailable", http.StatusInternalServerError)
		return
	}
	defer s.db.Put(conn)

	found := false
	err = sqlitex.Execute(conn, "SELECT 1 FROM users WHERE name = ?", &sqlitex.ExecOptions{
		Args: []any{n},
		ResultFunc: func(*sqlite.Stmt) error {
			found = true
			return nil
		},
	})
	switch {
	case err != nil:
		log.Printf("lookup %q: %v", n, err)
		http.Error(w, "Sadly the lookup failed: "+n, http.StatusInternalServerError)
	case found:
		fmt.Fprintf(w, "Boom! We found you: %s\n", n)
	default:
		http.Error(w, "Sadly we could not find you: "+n, http.StatusNotFound)
	}
}

func (s *server) add(w http.ResponseWriter, r *http.Request) {
	n, ok := name(w, r)
	if !ok {
		return
	}
	conn, err := s.db.Take(r.Context())
	if err != nil {
		http.Error(w, "Database unavailable", http.StatusInternalServerError)
		return
	}
	defer s.db.Put(conn)

	// No existence check first: the UNIQUE constraint is the source of truth.
	err = sqlitex.Execute(conn, "INSERT INTO users (name) VALUES (?)", &sqlitex.ExecOptions{
		Args: []any{n},
	})
	switch {
	case err == nil:
		fmt.Fprintf(w, "Welcome to our community %s!\n", n)
	case sqlite.ErrCode(err) == sqlite.ResultConstraintUnique:
		http.Error(w, "Sadly the name is already taken: "+n, http.StatusConflict)
	default:
		log.Printf("add %q: %v", n, err)
		http.Error(w, "Sadly we failed to register you: "+n, http.StatusInternalServerError)
	}
}

func run() error {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	// svcbench's {host}; loopback when unset, never every interface by default.
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	dbPath := os.Getenv("DATABASE_PATH")
	if dbPath == "" {
		return errors.New("DATABASE_PATH is not set")
	}

	// The default pool flags open read-write, create the file and switch it to WAL.
	db, err := sqlitex.NewPool(dbPath, sqlitex.PoolOptions{})
	if err != nil {
		return fmt.Errorf("open %s: %w", dbPath, err)
	}
	defer db.Close()

	// Create the table on one connection so the service also works on an empty file.
	conn, err := db.Take(context.Background())
	if err != nil {
		return err
	}
	err = sqlitex.ExecuteScript(conn, schema, nil)
	db.Put(conn)
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}

	s := &server{db: db}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("pong"))
	})
	mux.HandleFunc("GET /add", s.add)
	mux.HandleFunc("GET /{$}", s.lookup)

	srv := &http.Server{Addr: net.JoinHostPort(host, port), Handler: plainText(mux)}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	// Listen before logging, so the start line means the port is open.
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("users (go net/http, zombiezen sqlite) listening on %s, database %s", ln.Addr(), dbPath)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Let in-flight requests finish before the pool is closed by the deferred Close.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// plainText sets the content type up front so fmt.Fprintf answers are labelled text/plain.
func plainText(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		h.ServeHTTP(w, r)
	})
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}
