// Command hello-nethttp is the `hello` scenario on Go's standard library only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// extraWork is EXTRA_WORK_US: CPU time each request spends on purpose (the `slower` variants, a known cost
// for calibrating svcbench duet). Zero by default.
var extraWork time.Duration

// threadCPU is the CPU time of the calling OS thread (CLOCK_THREAD_CPUTIME_ID: exact, where getrusage moves in
// clock ticks), so that the extra work is CPU time even when another process shares the CPU and preempts this one.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// spendExtraWork spins until this thread has used extraWork more CPU time.
func spendExtraWork() {
	if extraWork <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	until := threadCPU() + extraWork
	for x := uint64(1); threadCPU() < until; x++ {
		for i := 0; i < 64; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

var sink uint64

type message struct {
	Message string `json:"message"`
}

func plaintext(w http.ResponseWriter, r *http.Request) {
	spendExtraWork()
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("Hello, World!"))
}

func jsonHandler(w http.ResponseWriter, r *http.Request) {
	spendExtraWork()
	w.Header().Set("Content-Type", "application/json")
	// Encoded per request with encoding/json, as the spec requires.
	body, err := json.Marshal(message{Message: "Hello, World!"})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(body)
}

func main() {
	if us, err := strconv.Atoi(os.Getenv("EXTRA_WORK_US")); err == nil && us > 0 {
		extraWork = time.Duration(us) * time.Microsecond
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	// svcbench's {host}; loopback when unset, never every interface by default.
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}

	mux := http.NewServeMux()
	// "GET /{$}" matches only the root; every other path gets the mux's 404.
	mux.HandleFunc("GET /{$}", plaintext)
	mux.HandleFunc("GET /json", jsonHandler)

	srv := &http.Server{Addr: net.JoinHostPort(host, port), Handler: mux}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	// Listen before logging, so the start line means the port is bound.
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("hello-nethttp listening on %s", ln.Addr())

	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	<-ctx.Done()
	// Stop accepting and let in-flight requests finish.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Fatalf("shutdown: %v", err)
	}
}
