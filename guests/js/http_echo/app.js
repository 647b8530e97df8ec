// http-echo in JavaScript: a standard wasi:http/proxy component (the
// service-worker `fetch` event of componentize-js), nothing of Wharf's.
// It keeps the echo contract of Wharf's echo agents: 200 with the request
// body and headers, plus x-echo-method and x-echo-path; with
// `x-echo-chunks: N` (1–64) the body leaves in N pieces.

addEventListener("fetch", (event) => event.respondWith(echo(event.request)));

async function echo(request) {
  const body = new Uint8Array(await request.arrayBuffer());
  const headers = new Headers();
  for (const [name, value] of request.headers) {
    // The request's framing is not the answer's; a response carries no host.
    if (name !== "content-length" && name !== "host") {
      headers.append(name, value);
    }
  }
  headers.set("x-echo-method", request.method);
  headers.set("x-echo-path", new URL(request.url).pathname);
  const chunks = request.headers.get("x-echo-chunks");
  if (chunks === null) {
    headers.set("content-length", String(body.length));
    return new Response(body, { status: 200, headers });
  }
  const n = Number(chunks);
  if (!Number.isInteger(n) || n < 1 || n > 64) {
    return new Response("x-echo-chunks must be 1 to 64", { status: 400 });
  }
  const size = Math.max(1, Math.ceil(body.length / n));
  const stream = new ReadableStream({
    start(controller) {
      for (let at = 0; at < body.length; at += size) {
        controller.enqueue(body.slice(at, at + size));
      }
      controller.close();
    },
  });
  return new Response(stream, { status: 200, headers });
}
