// SPDX-License-Identifier: MIT

// An SGLang-shaped gRPC token streamer and its client on grpc-go (Debian's
// golang-google-grpc-dev), the way a Go router or engine front end is written: the service
// is registered with a grpc.ServiceDesc whose server-streaming handler receives the
// GenerateRequest and sends one GenerateResponse per token from the scheduler's channel,
// then the completion; errors are status errors the handler returns (grpc-status in the
// trailers). The scheduler is a goroutine that steps every --itl-ms for the running batch.
//
//	grpcstack server [--port N] [--ttft-ms F] [--itl-ms F] [--tokens N]
//	                 [--stall-every-tokens N --stall-ms M --stall-kind sleep|cpu]
//	                 [--fail-every N --fail-after K] [--reject-over N] [--truth FILE]
//	grpcstack client --port N [--requests N] [--concurrency C] [--max-tokens T]
//	                 [--cancel-every N --cancel-after K] [--id-prefix P] [--out FILE]
//
// Flags mean what they mean for ../server.py and ../client.py, and the truth and the
// client's lines have their fields. The server's first stdout line is "listening on
// 127.0.0.1:PORT". Times are CLOCK_MONOTONIC ns from a raw clock_gettime syscall.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func monoNs() int64 {
	var ts syscall.Timespec

	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func main() {
	encoding.RegisterCodec(rawCodec{})
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcstack server|client [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		serverMain(os.Args[2:])
	case "client":
		clientMain(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "grpcstack: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// ------------------------------------------------------------------ server

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
	GrpcStatus  int        `json:"grpc_status"`
	GrpcMessage string     `json:"grpc_message"`
	TStartNs    int64      `json:"t_start_ns"`
	TTokenNs    []int64    `json:"t_token_ns"`
	TEndNs      int64      `json:"t_end_ns"`
	Chunks      int        `json:"chunks"`
	Tokens      int        `json:"tokens"`
	CountOnWire bool       `json:"count_on_wire"`
	Aborted     bool       `json:"aborted"`
	Stalls      []stallRec `json:"stalls"`
}

type output struct {
	done  bool
	token uint64
	n     uint64
}

type running struct {
	n, made uint64
	ready   int64
	out     chan output
}

type scheduler struct {
	mu         sync.Mutex
	reqs       map[string]*running
	wake       chan struct{}
	itl        time.Duration
	ttftNs     int64
	stallEvery uint64
	stallMs    float64
	stallKind  string
	stalls     []stallRec
}

func (s *scheduler) add(rid string, n uint64) chan output {
	r := &running{n: n, ready: monoNs() + s.ttftNs, out: make(chan output, n+1)}
	s.mu.Lock()
	s.reqs[rid] = r
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return r.out
}

func (s *scheduler) drop(rid string) {
	s.mu.Lock()
	delete(s.reqs, rid)
	s.mu.Unlock()
}

//go:noinline
func stallCPU(ms float64) {
	end := monoNs() + int64(ms*1e6)
	for monoNs() < end {
	}
}

func (s *scheduler) stallDue() bool {
	if s.stallEvery == 0 {
		return false
	}
	t := monoNs()
	for _, r := range s.reqs {
		if r.ready <= t && (r.made+1)%s.stallEvery == 0 {
			return true
		}
	}
	return false
}

func (s *scheduler) run() {
	for {
		s.mu.Lock()
		idle := len(s.reqs) == 0
		s.mu.Unlock()
		if idle {
			<-s.wake
		}
		time.Sleep(s.itl)
		s.mu.Lock()
		if s.stallDue() {
			t0 := monoNs()
			fn := "main.(*scheduler).run"
			if s.stallKind == "cpu" {
				stallCPU(s.stallMs)
				fn = "main.stallCPU"
			} else {
				time.Sleep(time.Duration(s.stallMs * 1e6))
			}
			s.stalls = append(s.stalls, stallRec{Kind: s.stallKind, Pid: os.Getpid(),
				Function: fn, TStartNs: t0, TEndNs: monoNs()})
		}
		t := monoNs()
		for rid, r := range s.reqs {
			if r.ready > t {
				continue
			}
			r.made++
			r.out <- output{token: 1000 + r.made}
			if r.made >= r.n {
				r.out <- output{done: true, n: r.made}
				delete(s.reqs, rid)
			}
		}
		s.mu.Unlock()
	}
}

type server struct {
	sched      *scheduler
	tokens     uint64
	failEvery  int
	failAfter  int
	rejectOver uint64
	mu         sync.Mutex
	count      int
	truth      *os.File
}

func (sv *server) log(t *truth) {
	if sv.truth == nil {
		return
	}
	sv.sched.mu.Lock()
	for _, s := range sv.sched.stalls {
		if s.TEndNs >= t.TStartNs && s.TStartNs <= t.TEndNs {
			s.BeforeChunk = len(t.TTokenNs)
			for i, x := range t.TTokenNs {
				if x >= s.TEndNs {
					s.BeforeChunk = i
					break
				}
			}
			t.Stalls = append(t.Stalls, s)
		}
	}
	sv.sched.mu.Unlock()
	b, _ := json.Marshal(t)
	sv.mu.Lock()
	sv.truth.Write(append(b, '\n'))
	sv.mu.Unlock()
}

// generate is what protoc-gen-go-grpc's _SglangScheduler_Generate_Handler and the servicer
// do together: receive the one request, then send the stream.
func (sv *server) generate(srv interface{}, stream grpc.ServerStream) (err error) {
	t := &truth{Stack: "grpc-go " + grpc.Version, Pid: os.Getpid(), Method: "POST",
		Path: path, Format: "grpc", Stream: true, Status: 200, TStartNs: monoNs(),
		TTokenNs: []int64{}, Stalls: []stallRec{}}
	defer func() {
		t.TEndNs = monoNs()
		if st, ok := status.FromError(err); ok && err != nil {
			t.GrpcStatus = int(st.Code())
			t.GrpcMessage = st.Message()
		}
		sv.log(t)
	}()
	var raw []byte
	if err := stream.RecvMsg(&raw); err != nil {
		return err
	}
	var req generateRequest
	if err := req.unmarshal(raw); err != nil {
		return status.Error(codes.InvalidArgument, "bad request")
	}
	t.RequestID = req.RequestID
	sv.mu.Lock()
	sv.count++
	nth := sv.count
	sv.mu.Unlock()
	n := req.MaxNewTokens
	if n == 0 {
		n = sv.tokens
	}
	if sv.rejectOver > 0 && n > sv.rejectOver {
		return status.Errorf(codes.InvalidArgument, "max_new_tokens %d over %d", n, sv.rejectOver)
	}
	fail := sv.failEvery > 0 && nth%sv.failEvery == 0
	out := sv.sched.add(req.RequestID, n)
	defer sv.sched.drop(req.RequestID)
	prompt := uint64(len(req.InputIDs))
	for {
		var o output
		select {
		case o = <-out:
		case <-stream.Context().Done():
			t.Aborted = true
			return status.FromContextError(stream.Context().Err()).Err()
		}
		if fail && t.Chunks >= sv.failAfter {
			return status.Error(codes.Internal, "engine failure")
		}
		var msg []byte
		if o.done {
			ids := make([]uint64, o.n)
			for i := range ids {
				ids[i] = 1001 + uint64(i)
			}
			msg = completeResponse(req.RequestID, ids, prompt, o.n)
		} else {
			t.Tokens++
			msg = chunkResponse(req.RequestID, o.token, fmt.Sprintf(" tok%d", t.Tokens),
				prompt, uint64(t.Tokens))
		}
		t.Chunks++
		t.TTokenNs = append(t.TTokenNs, monoNs())
		if err := stream.SendMsg(&msg); err != nil {
			t.Aborted = true
			return err
		}
		if o.done {
			return nil
		}
	}
}

func serverMain(argv []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	port := fs.Int("port", 50051, "TCP port on 127.0.0.1 (0: any)")
	ttftMs := fs.Float64("ttft-ms", 50, "prefill delay, ms")
	itlMs := fs.Float64("itl-ms", 20, "delay between tokens, ms")
	tokens := fs.Uint64("tokens", 32, "tokens when the request sets no max_new_tokens")
	stallEvery := fs.Uint64("stall-every-tokens", 0, "stall before every N-th token")
	stallMs := fs.Float64("stall-ms", 0, "stall length, ms")
	stallKind := fs.String("stall-kind", "sleep", "sleep or cpu")
	failEvery := fs.Int("fail-every", 0, "every N-th request fails")
	failAfter := fs.Int("fail-after", 0, "...after K messages")
	rejectOver := fs.Uint64("reject-over", 0, "refuse requests for more tokens than this")
	truthPath := fs.String("truth", "", "one JSON line per request")
	fs.Parse(argv)

	sched := &scheduler{reqs: map[string]*running{}, wake: make(chan struct{}, 1),
		itl: time.Duration(*itlMs * 1e6), ttftNs: int64(*ttftMs * 1e6),
		stallEvery: *stallEvery, stallMs: *stallMs, stallKind: *stallKind}
	sv := &server{sched: sched, tokens: *tokens, failEvery: *failEvery, failAfter: *failAfter,
		rejectOver: *rejectOver}
	if *truthPath != "" {
		f, err := os.OpenFile(*truthPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcstack:", err)
			os.Exit(1)
		}
		sv.truth = f
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcstack:", err)
		os.Exit(1)
	}
	gs := grpc.NewServer()
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*interface{})(nil),
		Streams: []grpc.StreamDesc{{StreamName: method, Handler: sv.generate,
			ServerStreams: true}},
		Metadata: "sglang_scheduler.proto",
	}, struct{}{})
	go sched.run()
	fmt.Printf("listening on %s\n", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		gs.Stop()
	}()
	gs.Serve(ln)
}

// ------------------------------------------------------------------ client

type callRec struct {
	RequestID   string  `json:"request_id"`
	Status      int     `json:"status"`
	GrpcStatus  int     `json:"grpc_status"`
	GrpcMessage string  `json:"grpc_message"`
	TSentNs     int64   `json:"t_sent_ns"`
	TChunkNs    []int64 `json:"t_chunk_ns"`
	Chunks      int     `json:"chunks"`
	Tokens      int     `json:"tokens"`
	Aborted     bool    `json:"aborted"`
	Final       bool    `json:"final"`
	Error       *string `json:"error"`
	TDoneNs     int64   `json:"t_done_ns"`
}

func call(cc *grpc.ClientConn, rid string, maxTokens uint64, cancelAfter int) *callRec {
	rec := &callRec{RequestID: rid, TSentNs: monoNs(), TChunkNs: []int64{}}
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(),
		"x-request-id", rid))
	defer cancel()
	desc := &grpc.StreamDesc{StreamName: method, ServerStreams: true}
	st, err := cc.NewStream(ctx, desc, path)
	var complete bool
	if err == nil {
		req := (&generateRequest{RequestID: rid, Text: "the quick brown fox",
			InputIDs: []uint64{101, 102, 103, 104, 105}, MaxNewTokens: maxTokens}).marshal()
		if err = st.SendMsg(&req); err == nil {
			err = st.CloseSend()
		}
	}
	for err == nil {
		var msg []byte
		if err = st.RecvMsg(&msg); err != nil {
			break
		}
		rec.TChunkNs = append(rec.TChunkNs, monoNs())
		rec.Chunks++
		switch responseKind(msg) {
		case "chunk":
			rec.Tokens++
		case "complete":
			complete = true
		}
		if cancelAfter > 0 && rec.Chunks >= cancelAfter {
			cancel()
			rec.Aborted = true
			err = context.Canceled
		}
	}
	if err == io.EOF {
		err = nil
	}
	if st != nil {
		if md, e := st.Header(); e == nil && md != nil {
			rec.Status = 200
		}
	}
	s := status.Convert(err)
	if rec.Aborted {
		s = status.New(codes.Canceled, "cancelled")
	}
	rec.GrpcStatus = int(s.Code())
	rec.GrpcMessage = s.Message()
	rec.Final = complete && s.Code() == codes.OK
	if s.Code() != codes.OK && s.Code() != codes.Canceled {
		e := s.Code().String()
		rec.Error = &e
	}
	rec.TDoneNs = monoNs()
	return rec
}

func clientMain(argv []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	port := fs.Int("port", 0, "server port on 127.0.0.1")
	requests := fs.Int("requests", 4, "calls")
	concurrency := fs.Int("concurrency", 2, "calls at once")
	maxTokens := fs.Uint64("max-tokens", 8, "max_new_tokens")
	cancelEvery := fs.Int("cancel-every", 0, "cancel every N-th call")
	cancelAfter := fs.Int("cancel-after", 1, "...after K messages")
	prefix := fs.String("id-prefix", fmt.Sprintf("gg-%d", os.Getpid()), "request id prefix")
	outPath := fs.String("out", "", "one JSON line per call")
	fs.Parse(argv)

	out := os.Stdout
	if *outPath != "" {
		f, err := os.OpenFile(*outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpcstack:", err)
			os.Exit(1)
		}
		out = f
	}
	cc, err := grpc.Dial(fmt.Sprintf("127.0.0.1:%d", *port), grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcstack:", err)
		os.Exit(1)
	}
	defer cc.Close()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, *concurrency)
	for i := 1; i <= *requests; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			after := 0
			if *cancelEvery > 0 && i%*cancelEvery == 0 {
				after = *cancelAfter
			}
			rec := call(cc, fmt.Sprintf("%s-%d", *prefix, i), *maxTokens, after)
			b, _ := json.Marshal(rec)
			mu.Lock()
			out.Write(append(b, '\n'))
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	// a router keeps its connection: a cancelled call's RST_STREAM is written before the
	// connection goes, as it would be from a process that lives on
	time.Sleep(200 * time.Millisecond)
}
