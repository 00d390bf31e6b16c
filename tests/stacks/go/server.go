// SPDX-License-Identifier: MIT

// An Ollama-shaped streaming server on Go's net/http, stdlib only, written the way Ollama's
// server is: a generation goroutine (Ollama's runner callback) feeds a channel, the handler
// ranges over it and for every response marshals one JSON object, Writes it and Flushes
// (gin's c.Stream), so each token is one HTTP chunk in one write(2); when the handler
// returns, net/http writes the chunked terminator on its own.
//
//	POST /api/chat, /api/generate  NDJSON: {"model","created_at","message"|"response",
//	                               "done":false} per token, then {"done":true,
//	                               "done_reason":"stop","eval_count":N,...}
//	POST /v1/chat/completions      OpenAI SSE (Ollama's openai middleware: role in every
//	                               delta; final chunk, usage chunk and [DONE] in one flush)
//	GET  /                         "Ollama is running"
//
// Flags (Go's flag package: -flag or --flag):
//
//	--port N                TCP port on 127.0.0.1, 0 picks one (default 11434)
//	--uds PATH              listen on a unix socket instead (PATH is replaced)
//	--ttft-ms F, --itl-ms F prefill delay, delay between tokens (default 50, 20)
//	--tokens N              tokens when the request sets no num_predict/max_tokens (32)
//	--tokens-per-chunk K    model tokens each streamed piece stands for (default 1)
//	--stall-every-tokens N, --stall-ms M
//	                        the generation goroutine sleeps M ms more before tokens N,
//	                        2N, ... (from 1); logged in the truth's "stalls"
//	--stall-kind K          sleep (default): time.Sleep, the goroutine parked on a timer;
//	                        device: its thread blocked M ms in a syscall (deviceWait), as
//	                        a cgo call into a driver holds it (Ollama's runner in llama.cpp)
//	--truth FILE            one JSON line per request (TRUTH.md)
//
// The first stdout line is "listening on 127.0.0.1:PORT" (or "listening on unix:PATH").
// Truth times are CLOCK_MONOTONIC ns read with a raw clock_gettime syscall, as tokentrace's.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

var (
	port       = flag.Int("port", 11434, "TCP port on 127.0.0.1 (0: any)")
	uds        = flag.String("uds", "", "unix socket path to listen on instead")
	ttftMs     = flag.Float64("ttft-ms", 50, "prefill delay, ms")
	itlMs      = flag.Float64("itl-ms", 20, "delay between tokens, ms")
	nTokens    = flag.Int("tokens", 32, "tokens when the request sets no limit")
	perChunk   = flag.Int("tokens-per-chunk", 1, "model tokens per streamed piece")
	stallEvery = flag.Int("stall-every-tokens", 0, "stall before every N-th token")
	stallMs    = flag.Float64("stall-ms", 0, "stall length, ms")
	stallKind  = flag.String("stall-kind", "sleep", "sleep (time.Sleep) or device (a blocking syscall)")
	truthPath  = flag.String("truth", "", "truth file, one JSON line per request")
)

// monoNs is CLOCK_MONOTONIC (clock id 1) straight from the kernel: Go's own monotonic
// clock has another origin, and the truth must compare with tokentrace's.
func monoNs() int64 {
	var ts syscall.Timespec

	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// deviceWait holds the calling goroutine's OS thread in the kernel for ms, the way a
// blocking driver call does: a nanosleep syscall, not the runtime's timer (the runtime
// hands the thread's P to another thread meanwhile). noinline: its name must be on the stack.
//
//go:noinline
func deviceWait(ms float64) {
	ts := syscall.NsecToTimespec(int64(ms * 1e6))

	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

func msDur(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

type stallRec struct {
	Kind        string `json:"kind"`
	Pid         int    `json:"pid"`
	Tid         *int   `json:"tid"` // goroutines move between threads: unknown
	Function    string `json:"function"`
	TStartNs    int64  `json:"t_start_ns"`
	TEndNs      int64  `json:"t_end_ns"`
	BeforeChunk int    `json:"before_chunk"`
}

type truth struct {
	RequestID   string     `json:"request_id"`
	Stack       string     `json:"stack"`
	Pid         int        `json:"pid"`
	Method      string     `json:"method"`
	Path        string     `json:"path"`
	Format      string     `json:"format"`
	Stream      bool       `json:"stream"`
	Status      int        `json:"status"`
	Model       string     `json:"model"`
	TStartNs    int64      `json:"t_start_ns"`
	TTokenNs    []int64    `json:"t_token_ns"`
	TTokenEndNs []int64    `json:"t_token_end_ns"`
	TEndNs      int64      `json:"t_end_ns"`
	Chunks      int        `json:"chunks"`
	Tokens      int        `json:"tokens"`
	CountOnWire bool       `json:"count_on_wire"`
	Aborted     bool       `json:"aborted"`
	Stalls      []stallRec `json:"stalls"`
}

var truthMu sync.Mutex
var truthFile *os.File

func writeTruth(t *truth) {
	if truthFile == nil {
		return
	}
	b, err := json.Marshal(t)
	if err != nil {
		return
	}
	truthMu.Lock()
	truthFile.Write(append(b, '\n'))
	truthMu.Unlock()
}

type piece struct {
	text   string
	tokens int
}

// generate is the model: it produces n pieces at the configured pace on its own goroutine,
// as Ollama's runner streams completion results to the server.
// Stalls go into t under mu while *finished is false: after that the truth is written.
func generate(done <-chan struct{}, n int, t *truth, mu *sync.Mutex, finished *bool) <-chan piece {
	ch := make(chan piece)
	go func() {
		defer close(ch)
		time.Sleep(msDur(*ttftMs))
		for i := 0; i < n; i++ {
			if i > 0 {
				time.Sleep(msDur(*itlMs))
			}
			if *stallEvery > 0 && (i+1)%*stallEvery == 0 {
				t0 := monoNs()
				kind, fn := "sleep", "main.generate.func1"
				if *stallKind == "device" {
					kind, fn = "device", "main.deviceWait"
					deviceWait(*stallMs)
				} else {
					time.Sleep(msDur(*stallMs))
				}
				mu.Lock()
				if !*finished {
					t.Stalls = append(t.Stalls, stallRec{Kind: kind,
						Pid: os.Getpid(), Function: fn,
						TStartNs: t0, TEndNs: monoNs(), BeforeChunk: i})
				}
				mu.Unlock()
			}
			var sb strings.Builder
			for k := 0; k < *perChunk; k++ {
				fmt.Fprintf(&sb, " tok%d", i**perChunk+k)
			}
			select {
			case ch <- piece{sb.String(), *perChunk}:
			case <-done:
				return
			}
		}
	}()
	return ch
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type request struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	Prompt   string    `json:"prompt"`
	Stream   *bool     `json:"stream"`
	Options  struct {
		NumPredict *int `json:"num_predict"`
	} `json:"options"`
	MaxTokens     *int `json:"max_tokens"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// Ollama's api.ChatResponse / api.GenerateResponse, field order as on the wire.
type ollamaResp struct {
	Model              string   `json:"model"`
	CreatedAt          string   `json:"created_at"`
	Message            *message `json:"message,omitempty"`
	Response           *string  `json:"response,omitempty"`
	DoneReason         string   `json:"done_reason,omitempty"`
	Done               bool     `json:"done"`
	Context            []int    `json:"context,omitempty"`
	TotalDuration      int64    `json:"total_duration,omitempty"`
	LoadDuration       int64    `json:"load_duration,omitempty"`
	PromptEvalCount    int      `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64    `json:"prompt_eval_duration,omitempty"`
	EvalCount          int      `json:"eval_count,omitempty"`
	EvalDuration       int64    `json:"eval_duration,omitempty"`
}

type oaiDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type oaiChoice struct {
	Index        int      `json:"index"`
	Delta        oaiDelta `json:"delta"`
	FinishReason *string  `json:"finish_reason"`
}

type oaiUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type oaiChunk struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	SystemFingerprint string      `json:"system_fingerprint"`
	Choices           []oaiChoice `json:"choices"`
	Usage             *oaiUsage   `json:"usage,omitempty"`
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Write(b)
}

func newTruth(r *http.Request, format string) *truth {
	return &truth{RequestID: r.Header.Get("X-Request-Id"), Stack: "go-net-http",
		Pid: os.Getpid(), Method: r.Method, Path: r.URL.RequestURI(), Format: format,
		Status: 200, TTokenNs: []int64{}, TTokenEndNs: []int64{}, Stalls: []stallRec{}}
}

func readRequest(w http.ResponseWriter, r *http.Request) (*request, int64, bool) {
	if r.Method != http.MethodPost {
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return nil, 0, false
	}
	body, err := io.ReadAll(r.Body)
	tStart := monoNs()
	if err != nil {
		return nil, 0, false
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "invalid request body")
		return nil, 0, false
	}
	if req.Model == "" {
		req.Model = "go-llm"
	}
	return &req, tStart, true
}

func limitOr(p *int) int {
	if p != nil && *p > 0 {
		return (*p + *perChunk - 1) / *perChunk
	}
	return *nTokens
}

func promptTokens(req *request) int {
	n := len(req.Prompt)
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return n/4 + 1
}

// stream runs one streamed response: for every piece, emit() renders and Writes it, then
// one Flush sends it; fin() renders the end. The truth's hand-off times bracket Write+Flush.
func stream(w http.ResponseWriter, r *http.Request, t *truth, n int,
	emit func(piece) []byte, fin func(tokens int) []byte) {
	var mu sync.Mutex
	var finished bool
	flusher := w.(http.Flusher)
	ctx := r.Context()
	done := make(chan struct{})
	defer close(done)
	ch := generate(done, n, t, &mu, &finished)
	for {
		var p piece
		var ok bool

		select {
		case p, ok = <-ch:
		case <-ctx.Done():
		}
		if !ok {
			break
		}
		if ctx.Err() != nil {
			break
		}
		b := emit(p)
		t0 := monoNs()
		_, err := w.Write(b)
		flusher.Flush()
		t1 := monoNs()
		if err != nil {
			break
		}
		t.TTokenNs = append(t.TTokenNs, t0)
		t.TTokenEndNs = append(t.TTokenEndNs, t1)
		t.Chunks++
		t.Tokens += p.tokens
	}
	if ctx.Err() == nil && t.Chunks == n {
		if _, err := w.Write(fin(t.Tokens)); err == nil {
			flusher.Flush()
		}
	}
	// a client gone before the end shows as a cancelled context or a failed write
	mu.Lock()
	t.Aborted = ctx.Err() != nil || t.Chunks < n
	t.TEndNs = monoNs()
	finished = true
	mu.Unlock()
}

func ollamaHandler(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := newTruth(r, "ndjson")
		req, tStart, ok := readRequest(w, r)
		if !ok {
			return
		}
		t.TStartNs, t.Model, t.CountOnWire = tStart, req.Model, true
		t.Stream = req.Stream == nil || *req.Stream
		if !t.Stream {
			httpError(w, http.StatusBadRequest, "this server only streams")
			return
		}
		n := limitOr(req.Options.NumPredict)
		now := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
		line := func(o *ollamaResp) []byte {
			b, _ := json.Marshal(o)
			return append(b, '\n')
		}
		var tFirst int64
		w.Header().Set("Content-Type", "application/x-ndjson")
		stream(w, r, t, n, func(p piece) []byte {
			o := &ollamaResp{Model: req.Model, CreatedAt: now()}
			if chat {
				o.Message = &message{Role: "assistant", Content: p.text}
			} else {
				o.Response = &p.text
			}
			if tFirst == 0 {
				tFirst = monoNs()
			}
			return line(o)
		}, func(tokens int) []byte {
			end := monoNs()
			o := &ollamaResp{Model: req.Model, CreatedAt: now(), Done: true,
				DoneReason: "stop", TotalDuration: end - tStart, LoadDuration: 1,
				PromptEvalCount: promptTokens(req), PromptEvalDuration: tFirst - tStart,
				EvalCount: tokens, EvalDuration: end - tFirst}
			if chat {
				o.Message = &message{Role: "assistant"}
			} else {
				empty := ""
				o.Response = &empty
				o.Context = []int{1, 2, 3}
			}
			return line(o)
		})
		writeTruth(t)
	}
}

func openaiHandler(w http.ResponseWriter, r *http.Request) {
	t := newTruth(r, "sse")
	req, tStart, ok := readRequest(w, r)
	if !ok {
		return
	}
	t.TStartNs, t.Model = tStart, req.Model
	t.Stream = req.Stream != nil && *req.Stream
	t.CountOnWire = req.StreamOptions.IncludeUsage
	if !t.Stream {
		httpError(w, http.StatusBadRequest, "this server only streams")
		return
	}
	n := limitOr(req.MaxTokens)
	id := "chatcmpl-" + strconv.FormatInt(monoNs()%1000000, 10)
	created := time.Now().Unix()
	event := func(c *oaiChunk) []byte {
		b, _ := json.Marshal(c)
		return []byte("data: " + string(b) + "\n\n")
	}
	chunk := func(d oaiDelta, finish *string) *oaiChunk {
		return &oaiChunk{ID: id, Object: "chat.completion.chunk", Created: created,
			Model: req.Model, SystemFingerprint: "fp_ollama",
			Choices: []oaiChoice{{Index: 0, Delta: d, FinishReason: finish}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	stream(w, r, t, n, func(p piece) []byte {
		return event(chunk(oaiDelta{Role: "assistant", Content: p.text}, nil))
	}, func(tokens int) []byte {
		stop := "stop"
		out := event(chunk(oaiDelta{Role: "assistant"}, &stop))
		if req.StreamOptions.IncludeUsage {
			pt := promptTokens(req)
			u := &oaiChunk{ID: id, Object: "chat.completion.chunk", Created: created,
				Model: req.Model, SystemFingerprint: "fp_ollama", Choices: []oaiChoice{},
				Usage: &oaiUsage{pt, tokens, pt + tokens}}
			out = append(out, event(u)...)
		}
		return append(out, "data: [DONE]\n\n"...)
	})
	writeTruth(t)
}

func main() {
	flag.Parse()
	if *stallEvery > 0 && *stallMs <= 0 {
		fmt.Fprintln(os.Stderr, "go-server: --stall-every-tokens needs --stall-ms")
		os.Exit(2)
	}
	if *stallKind != "sleep" && *stallKind != "device" {
		fmt.Fprintln(os.Stderr, "go-server: --stall-kind is sleep or device")
		os.Exit(2)
	}
	if *perChunk < 1 || *nTokens < 1 {
		fmt.Fprintln(os.Stderr, "go-server: --tokens and --tokens-per-chunk must be >= 1")
		os.Exit(2)
	}
	if *truthPath != "" {
		f, err := os.Create(*truthPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-server:", err)
			os.Exit(1)
		}
		truthFile = f
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/chat", ollamaHandler(true))
	mux.HandleFunc("/api/generate", ollamaHandler(false))
	mux.HandleFunc("/v1/chat/completions", openaiHandler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			httpError(w, http.StatusNotFound, "not found")
			return
		}
		w.Write([]byte("Ollama is running"))
	})

	var ln net.Listener
	var err error
	if *uds != "" {
		if err = os.Remove(*uds); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "go-server:", err)
			os.Exit(1)
		}
		ln, err = net.Listen("unix", *uds)
	} else {
		ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-server:", err)
		os.Exit(1)
	}
	if *uds != "" {
		fmt.Printf("listening on unix:%s\n", *uds)
	} else {
		fmt.Printf("listening on %s\n", ln.Addr().String())
	}
	srv := &http.Server{Handler: mux}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "go-server:", err)
		os.Exit(1)
	}
	if truthFile != nil {
		truthMu.Lock()
		truthFile.Close()
		truthMu.Unlock()
	}
}
