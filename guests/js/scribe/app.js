// scribe (JavaScript): the streaming A2A agent of guests/scribe. Sent text,
// it writes the text back word by word as chunks of one artifact, each
// reaching streaming clients as it is reported, then completes; `count N`
// streams N chunks, `ping` is answered `pong` as a direct reply (a message,
// no task), `fail` fails the task, `reject` rejects it, `trap` traps. Its plain `handle` streams the words as server-sent events.
import { addArtifact, working } from 'wharf:plugin/a2a@0.2.0';
import { start, write } from 'wharf:plugin/streaming@0.2.0';
import { a2aArtifact, a2aMessage, a2aOutcome, a2aReply, a2aText, headers } from '../wharf-guest.js';

const encoder = new TextEncoder();

function chunks(id, pieces) {
  pieces.forEach((piece, i) => addArtifact(a2aArtifact(id, piece, id), i > 0, i === pieces.length - 1));
}

export const a2aHandler = {
  onMessage(turn) {
    const words = a2aText(turn.message).split(/\s+/).filter((w) => w);
    if (words.length === 2 && words[0] === 'count') {
      const n = Number(words[1]);
      if (!Number.isInteger(n) || n < 0) throw { tag: 'bad-request', val: `\`${words[1]}\` is not a count` };
      chunks('count', Array.from({ length: n }, (_, i) => `${i}\n`));
      return a2aOutcome('completed', `counted to ${n}`);
    }
    if (words.length === 1 && words[0] === 'ping') return a2aReply('pong');
    if (words.length === 1 && words[0] === 'fail') throw { tag: 'unavailable', val: 'asked to fail' };
    if (words.length === 1 && words[0] === 'reject') throw { tag: 'bad-request', val: 'I will not write that' };
    if (words.length === 1 && words[0] === 'trap') throw new Error('asked to trap');
    if (words.length === 0) return a2aOutcome('input-required', 'What shall I write?');
    working(a2aMessage(`writing ${words.length} words`));
    chunks('text', words.map((w) => `${w} `));
    return a2aOutcome('completed', `wrote ${words.length} words`);
  },
};

export function handle(req) {
  start(200, headers(new Uint8Array(0), ['content-type', 'text/event-stream']));
  const text = new TextDecoder().decode(req.body);
  for (const word of text.split(/\s+/).filter((w) => w)) {
    write(encoder.encode(`data: ${JSON.stringify(word)}\n\n`));
  }
  return { status: 200, headers: new Uint8Array(0), body: encoder.encode('event: done\ndata: {}\n\n') };
}

export function describe() {
  return {
    name: 'scribe-js',
    version: '0.1.0',
    description: 'Writes what it is sent back, word by word, as a streamed artifact (JavaScript)',
    skills: [
      {
        id: 'write',
        name: 'Write',
        description: 'Streams the words it is sent back as artifact chunks',
        tags: ['streaming', 'text'],
      },
    ],
  };
}

export function health() {
  return { tag: 'ok' };
}
