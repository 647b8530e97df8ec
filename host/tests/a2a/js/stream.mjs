// Streams from a running Wharf with the official A2A JavaScript SDK
// (@a2a-js/sdk): SendStreamingMessage to `scribe` over each binding the
// card offers, checking every event in order. Usage: node stream.mjs BASE_URL
// (run from a directory whose node_modules holds the SDK: the test copies it
// next to the install scripts/setup/test-clients.sh makes). The SDK resolves the
// card path relative to the base URL, so the base ends in a slash.
// Prints one line per check and `N passed, N failed`; exits non-zero on a failure.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const base = process.argv[2];

function message(text) {
  return {
    message: {
      messageId: randomUUID(),
      contextId: "",
      taskId: "",
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  };
}

function factory(transport) {
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [transport],
    }),
  );
}

async function streamCount(transport) {
  const client = await factory(transport).createFromUrl(`${base}/a2a/scribe/`);
  const events = [];
  for await (const event of client.sendMessageStream(message("count 5"))) {
    events.push(event);
  }
  const kinds = events.map((e) => e.payload?.$case);
  assert.deepEqual(kinds, ["task", ...Array(5).fill("artifactUpdate"), "statusUpdate"]);
  const chunks = events
    .slice(1, 6)
    .map((e) => e.payload.value.artifact.parts[0].content.value);
  assert.deepEqual(chunks, ["0\n", "1\n", "2\n", "3\n", "4\n"]);
  assert.deepEqual(
    events.slice(1, 6).map((e) => e.payload.value.append),
    [false, true, true, true, true],
  );
  const last = events[6].payload.value.status;
  assert.equal(last.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(last));
}

const checks = [
  ["JSONRPC stream of 5 chunks", () => streamCount(new JsonRpcTransportFactory())],
  ["HTTP+JSON stream of 5 chunks", () => streamCount(new RestTransportFactory())],
];

let passed = 0;
let failed = 0;
for (const [name, check] of checks) {
  try {
    await check();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed += 1;
    console.log(`FAIL ${name}\n${err.stack ?? err}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
