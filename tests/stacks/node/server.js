#!/usr/bin/env node
// SPDX-License-Identifier: MIT
/*
 * An OpenAI-compatible streaming front end on Node's own `http` module, written the way Node
 * LLM front ends are (node-llama-cpp's server, Vercel-AI-style route handlers): the model is
 * an async generator of text deltas, the handler iterates it with `for await` and
 * `res.write()`s one SSE event per delta, then the finish chunk, the usage chunk when asked,
 * `data: [DONE]`, and `res.end()`. Nothing here is shaped for the tracer: Node decides how
 * the bytes reach the socket (one writev per event, the stream's last events and the chunked
 * terminator in one writev, and under back-pressure every queued write in one writev).
 *
 * Usage: node server.js [--port N] [--bind ADDR] [--uds PATH] [--truth FILE]
 *          [--ttft-ms F] [--itl-ms F] [--tokens N] [--tokens-per-chunk K]
 *          [--stall-every-tokens N --stall-ms M]
 *
 *   --port N              TCP port, 0 picks one (default 8000)
 *   --bind ADDR           loopback address to listen on (default 127.0.0.1)
 *   --uds PATH            listen on a unix socket instead (PATH is replaced)
 *   --ttft-ms F           prefill: delay before the first delta (default 50)
 *   --itl-ms F            delay between deltas (default 20)
 *   --tokens N            deltas when the request sets no max_tokens (default 32)
 *   --tokens-per-chunk K  model tokens each delta stands for, as detokenizers merge
 *                         them; usage.completion_tokens counts model tokens (default 1)
 *   --stall-every-tokens N, --stall-ms M
 *                         an extra M ms timer gap before deltas N, 2N, ... (from 1),
 *                         logged in the truth's "stalls"
 *   --truth FILE          one JSON line per request, written when it ends (aborted ones
 *                         too): request_id (X-Request-Id) stack pid tid method path format
 *                         stream status model t_start_ns (the whole body read)
 *                         t_token_ns[] (just before each content res.write())
 *                         t_token_end_ns[] (right after it returned: Node may still hold
 *                         the bytes) t_end_ns chunks tokens count_on_wire aborted
 *                         stalls[{kind pid tid function t_start_ns t_end_ns before_chunk}]
 *                         backpressured_chunks (content chunks written while earlier
 *                         bytes still waited in Node for the socket: they leave
 *                         together, in one writev, when it drains) max_queued_bytes
 *
 * The first stdout line is "listening on 127.0.0.1:PORT" (or "listening on unix:PATH").
 * POST /v1/chat/completions ({"stream":true} or not), GET /health. Times in the truth are
 * process.hrtime.bigint(): CLOCK_MONOTONIC ns, as tokentrace's.
 */
'use strict';

const fs = require('fs');
const http = require('http');

const opts = {
	port: 8000,
	bind: '127.0.0.1',
	uds: null,
	truth: null,
	ttftMs: 50,
	itlMs: 20,
	tokens: 32,
	tokensPerChunk: 1,
	stallEvery: 0,
	stallMs: 0,
};

function die(msg) {
	process.stderr.write(`node-server: ${msg}\n`);
	process.exit(2);
}

function parseArgs(argv) {
	const num = (name, v, min, max) => {
		const x = Number(v);
		if (v === undefined || !Number.isFinite(x) || x < min || x > max)
			die(`${name} needs a number in [${min}, ${max}], got '${v}'`);
		return x;
	};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i], v = argv[i + 1];
		switch (a) {
		case '--port': opts.port = num(a, v, 0, 65535); i++; break;
		case '--bind': opts.bind = v; i++; break;
		case '--uds': opts.uds = v; i++; break;
		case '--truth': opts.truth = v; i++; break;
		case '--ttft-ms': opts.ttftMs = num(a, v, 0, 3600000); i++; break;
		case '--itl-ms': opts.itlMs = num(a, v, 0, 3600000); i++; break;
		case '--tokens': opts.tokens = num(a, v, 1, 100000); i++; break;
		case '--tokens-per-chunk': opts.tokensPerChunk = num(a, v, 1, 1000); i++; break;
		case '--stall-every-tokens': opts.stallEvery = num(a, v, 0, 100000); i++; break;
		case '--stall-ms': opts.stallMs = num(a, v, 0, 3600000); i++; break;
		case '-h': case '--help':
			// the comment at the top of this file
			process.stdout.write(fs.readFileSync(__filename, 'utf8').split(' */')[0]
				.split('\n').filter((l) => l.startsWith(' *')).map((l) => l.slice(3))
				.join('\n') + '\n');
			process.exit(0);
		default: die(`unknown option '${a}'`);
		}
	}
	if (opts.bind !== '127.0.0.1' && opts.bind !== '::1' && opts.bind !== 'localhost')
		die('--bind: loopback only');
	if (opts.stallEvery && !opts.stallMs)
		die('--stall-every-tokens needs --stall-ms');
}

const now = () => process.hrtime.bigint();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let truthFd = null;

function writeTruth(t) {
	if (truthFd === null)
		return;
	// BigInt times as plain JSON integers
	const line = JSON.stringify(t, (k, v) => (typeof v === 'bigint' ? `#${v}#` : v))
		.replace(/"#(\d+)#"/g, '$1');
	fs.writeSync(truthFd, line + '\n');
}

/*
 * The "model": yields text deltas at the configured pace, like node-llama-cpp's
 * onTextChunk turned into an async iterator. Injected stalls are one more timer gap.
 */
async function* generate(n, signal, stalls) {
	await sleep(opts.ttftMs);
	for (let i = 0; i < n && !signal.aborted; i++) {
		if (i > 0)
			await sleep(opts.itlMs);
		if (opts.stallEvery && (i + 1) % opts.stallEvery === 0 && !signal.aborted) {
			const t0 = now();
			await sleep(opts.stallMs);
			stalls.push({
				kind: 'timer', pid: process.pid, tid: process.pid, function: 'generate',
				t_start_ns: t0, t_end_ns: now(), before_chunk: i,
			});
		}
		if (signal.aborted)
			return;
		let text = '';
		for (let k = 0; k < opts.tokensPerChunk; k++)
			text += ` tok${i * opts.tokensPerChunk + k}`;
		yield text;
	}
}

function readBody(req) {
	return new Promise((resolve, reject) => {
		const parts = [];
		req.on('data', (d) => parts.push(d));
		req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
		req.on('error', reject);
	});
}

function sendJson(res, status, obj) {
	const body = JSON.stringify(obj);
	res.writeHead(status, {
		'Content-Type': 'application/json',
		'Content-Length': Buffer.byteLength(body),
	});
	res.end(body);
}

async function chatCompletions(req, res, rid) {
	const raw = await readBody(req);
	const t_start = now();
	let body;
	try {
		body = JSON.parse(raw);
	} catch (e) {
		sendJson(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
		return;
	}
	const model = typeof body.model === 'string' ? body.model : 'node-llm';
	const limit = body.max_completion_tokens ?? body.max_tokens;
	const nchunks = Number.isInteger(limit) && limit > 0 ?
		Math.ceil(limit / opts.tokensPerChunk) : opts.tokens;
	const usage = !!(body.stream_options && body.stream_options.include_usage);
	const id = `chatcmpl-${rid}`;
	const created = Math.floor(Date.now() / 1000);
	const truth = {
		request_id: rid, stack: 'node-http', pid: process.pid, tid: process.pid,
		method: req.method, path: req.url, format: body.stream ? 'sse' : 'json',
		stream: !!body.stream, status: 200, model, t_start_ns: t_start,
		t_token_ns: [], t_token_end_ns: [], t_end_ns: 0n, chunks: 0, tokens: 0,
		count_on_wire: usage || !body.stream, aborted: false, stalls: [],
		backpressured_chunks: 0, max_queued_bytes: 0,
	};
	const ac = new AbortController();
	// the client went away before the end: stop generating (Vercel AI's abortSignal)
	res.on('close', () => {
		if (!res.writableFinished)
			ac.abort();
	});
	const chunk = (delta, finish) => ({
		id, object: 'chat.completion.chunk', created, model,
		choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
	});
	const sse = (obj) => `data: ${JSON.stringify(obj)}\n\n`;
	const gone = () => ac.signal.aborted || res.destroyed || !res.socket ||
		!res.socket.writable;

	if (!body.stream) {
		let text = '';
		for await (const delta of generate(nchunks, ac.signal, truth.stalls))
			text += delta;
		if (ac.signal.aborted) {
			truth.aborted = true;
			truth.t_end_ns = now();
			writeTruth(truth);
			return;
		}
		const tokens = nchunks * opts.tokensPerChunk;
		const out = JSON.stringify({
			id, object: 'chat.completion', created, model,
			choices: [{ index: 0, message: { role: 'assistant', content: text },
				logprobs: null, finish_reason: 'stop' }],
			usage: { prompt_tokens: Math.ceil(raw.length / 4), completion_tokens: tokens,
				total_tokens: Math.ceil(raw.length / 4) + tokens },
		});
		res.writeHead(200, { 'Content-Type': 'application/json', 'X-Request-Id': rid });
		truth.t_token_ns.push(now());
		res.end(out);
		truth.t_token_end_ns.push(now());
		truth.t_end_ns = now();
		truth.chunks = 1;
		truth.tokens = tokens;
		writeTruth(truth);
		return;
	}

	res.writeHead(200, {
		'Content-Type': 'text/event-stream',
		'Cache-Control': 'no-cache',
		'X-Request-Id': rid,
	});
	// the role chunk goes out before prefill, with the headers
	res.write(sse(chunk({ role: 'assistant', content: '' }, null)));
	for await (const delta of generate(nchunks, ac.signal, truth.stalls)) {
		if (gone())
			break;
		// bytes still waiting in Node (the kernel said EAGAIN): this write queues behind
		// them, and they all leave in one writev when the socket drains
		const queued = res.writableLength;
		if (queued > 0) {
			truth.backpressured_chunks++;
			truth.max_queued_bytes = Math.max(truth.max_queued_bytes, queued);
		}
		truth.t_token_ns.push(now());
		res.write(sse(chunk({ content: delta }, null)));
		truth.t_token_end_ns.push(now());
		truth.chunks++;
		truth.tokens += opts.tokensPerChunk;
	}
	if (gone()) {
		truth.aborted = true;
		truth.t_end_ns = now();
		writeTruth(truth);
		return;
	}
	const prompt = Math.ceil(raw.length / 4);
	res.write(sse(chunk({}, limit ? 'length' : 'stop')));
	if (usage)
		res.write(sse({
			id, object: 'chat.completion.chunk', created, model, choices: [],
			usage: { prompt_tokens: prompt, completion_tokens: truth.tokens,
				total_tokens: prompt + truth.tokens },
		}));
	res.write('data: [DONE]\n\n');
	res.end();
	truth.t_end_ns = now();
	writeTruth(truth);
}

function handle(req, res) {
	const rid = req.headers['x-request-id'] || `node-${Math.random().toString(36).slice(2)}`;
	const path = req.url.split('?')[0];
	if (req.method === 'GET' && path === '/health') {
		res.writeHead(200, { 'Content-Type': 'text/plain' });
		res.end('ok');
		return;
	}
	if (path !== '/v1/chat/completions') {
		sendJson(res, 404, { error: { message: 'no such endpoint', type: 'not_found' } });
		return;
	}
	if (req.method !== 'POST') {
		sendJson(res, 405, { error: { message: 'use POST', type: 'invalid_request_error' } });
		return;
	}
	chatCompletions(req, res, rid).catch((e) => {
		process.stderr.write(`node-server: ${rid}: ${e.stack}\n`);
		if (!res.headersSent)
			sendJson(res, 500, { error: { message: 'internal error', type: 'server_error' } });
		else
			res.destroy();
	});
}

function main() {
	parseArgs(process.argv.slice(2));
	if (opts.truth)
		truthFd = fs.openSync(opts.truth, 'w');
	const server = http.createServer(handle);
	// Node's default answer to a request it cannot parse, plus a word on stderr
	server.on('clientError', (err, socket) => {
		process.stderr.write(`node-server: client error ${err.code}\n`);
		if (socket.writable && !socket.destroyed)
			socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
		else
			socket.destroy(err);
	});
	server.on('error', (e) => {
		process.stderr.write(`node-server: ${e.message}\n`);
		process.exit(1);
	});
	const onListen = () => {
		const a = server.address();
		process.stdout.write(typeof a === 'string' ? `listening on unix:${a}\n` :
			`listening on ${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}\n`);
	};
	if (opts.uds) {
		try {
			fs.unlinkSync(opts.uds);
		} catch (e) {
			if (e.code !== 'ENOENT')
				die(`--uds ${opts.uds}: ${e.message}`);
		}
		server.listen(opts.uds, onListen);
	} else {
		server.listen(opts.port, opts.bind, onListen);
	}
	const stop = () => {
		server.close();
		server.closeAllConnections();
		if (truthFd !== null)
			fs.closeSync(truthFd);
		truthFd = null;
		process.exit(0);
	};
	process.on('SIGTERM', stop);
	process.on('SIGINT', stop);
}

main();
