// A streaming chat client the way Node apps call an LLM API: fetch (undici) over TLS,
// the response body read as a stream of bytes, SSE events split on blank lines, stopping at
// [DONE]. The server's certificate is trusted through NODE_EXTRA_CA_CERTS, as apps do.
//
//   node fetch_client.js --port N [--requests N] [--concurrency N] [--tokens N]
//                        [--id-prefix P] --out FILE [--wait-file PATH] [--stay-file PATH]
//
// A chunk is what an application shows: an event whose delta carries content. Logs one JSON
// line per request, as tokenload does: request_id, status, t_sent_ns, t_chunk_ns
// (process.hrtime.bigint(), CLOCK_MONOTONIC, when each chunk was read), chunks, final.
// --wait-file: start once PATH exists; --stay-file: once done, stay up until PATH exists.
// Never prints payloads.
'use strict';
const fs = require('fs');

function opts(argv) {
	const o = { requests: 8, concurrency: 2, tokens: 16, idPrefix: 'node-', waitFile: null,
		stayFile: null };
	for (let i = 2; i < argv.length; i++) {
		const a = argv[i];
		const v = () => argv[++i];
		if (a === '--port') o.port = Number(v());
		else if (a === '--requests') o.requests = Number(v());
		else if (a === '--concurrency') o.concurrency = Number(v());
		else if (a === '--tokens') o.tokens = Number(v());
		else if (a === '--id-prefix') o.idPrefix = v();
		else if (a === '--out') o.out = v();
		else if (a === '--wait-file') o.waitFile = v();
		else if (a === '--stay-file') o.stayFile = v();
		else throw new Error(`fetch_client: unknown option '${a}'`);
	}
	if (!o.port || !o.out) throw new Error('fetch_client: --port and --out are needed');
	return o;
}

function hasContent(data) {
	try {
		const ch = (JSON.parse(data).choices || [{}])[0] || {};
		return Boolean(ch.delta && ch.delta.content);
	} catch (e) {
		return false;
	}
}

async function streamOne(o, rid) {
	const rec = { request_id: rid, status: null, t_sent_ns: process.hrtime.bigint().toString(),
		t_chunk_ns: [], final: false, error: null };
	try {
		const res = await fetch(`https://127.0.0.1:${o.port}/v1/chat/completions`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: 'text/event-stream',
				'x-request-id': rid },
			body: JSON.stringify({ model: 'tokensim', stream: true, max_tokens: o.tokens,
				messages: [{ role: 'user', content: 'hello' }] }),
		});
		rec.status = res.status;
		const dec = new TextDecoder();
		let buf = '';
		for await (const part of res.body) {
			const now = process.hrtime.bigint();
			buf += dec.decode(part, { stream: true });
			let end;
			while ((end = buf.indexOf('\n\n')) >= 0) {
				const ev = buf.slice(0, end);
				buf = buf.slice(end + 2);
				const data = ev.split('\n').filter((l) => l.startsWith('data:'))
					.map((l) => l.slice(5).trim()).join('\n');
				if (!data)
					continue;
				if (data === '[DONE]')
					rec.final = true;
				else if (hasContent(data))
					rec.t_chunk_ns.push(now.toString());
			}
		}
	} catch (e) {
		rec.error = e.name;
	}
	rec.chunks = rec.t_chunk_ns.length;
	// the log holds numbers: nanoseconds fit a double's 53 bits for months of uptime
	rec.t_sent_ns = Number(rec.t_sent_ns);
	rec.t_chunk_ns = rec.t_chunk_ns.map(Number);
	return rec;
}

async function main() {
	const o = opts(process.argv);
	while (o.waitFile && !fs.existsSync(o.waitFile))
		await new Promise((resolve) => setTimeout(resolve, 10));
	const out = fs.openSync(o.out, 'w');
	let next = 0;
	const lanes = Array.from({ length: o.concurrency }, async () => {
		while (next < o.requests) {
			const rid = `${o.idPrefix}${next++}`;
			fs.writeSync(out, JSON.stringify(await streamOne(o, rid)) + '\n');
		}
	});
	await Promise.all(lanes);
	fs.closeSync(out);
	while (o.stayFile && !fs.existsSync(o.stayFile))
		await new Promise((resolve) => setTimeout(resolve, 10));
}

main().catch((e) => {
	console.error(`fetch_client: ${e.message}`);
	process.exit(1);
});
