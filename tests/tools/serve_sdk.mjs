// The official OpenAI JavaScript SDK against a running tokscope serve
// (tests/golden/serve_sdk.sh): chat.completions.stream() with logprobs (the
// SDK merges chunks: a role and a first token in one chunk made it repeat
// the first logprobs entry, issue 35 #14), create() whole and streamed,
// models.list() and models.retrieve() (known and unknown id); completions with
// max_completion_tokens; a llama-server field tokscope does not run refused.
// node serve_sdk.mjs SDK_DIR PORT MODEL_ID; prints "ok - NAME" / "not ok - NAME".
import { createRequire } from 'node:module';
import path from 'node:path';

const [sdkDir, port, modelId] = process.argv.slice(2);
const require = createRequire(path.resolve(sdkDir, 'package.json'));
const OpenAI = require('openai').default ?? require('openai');
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000 });

async function check(name, fn) {
  let bad;
  try {
    bad = (await fn()) || [];
  } catch (e) {
    bad = [`${e.constructor.name}: ${e.message}`];
  }
  if (bad.length) {
    console.log(`not ok - ${name}`);
    for (const b of bad.slice(0, 6)) console.log(`#   ${String(b).slice(0, 300)}`);
  } else {
    console.log(`ok - ${name}`);
  }
}

const N = 8;
const body = {
  model: modelId,
  messages: [{ role: 'user', content: 'Once upon a time' }],
  max_tokens: N,
  temperature: 0,
  logprobs: true,
  top_logprobs: 2,
};

await check('SDK chat.completions.stream(): one logprobs entry per token, the text they spell', async () => {
  const bad = [];
  const stream = client.chat.completions.stream(body);
  let deltas = 0;
  stream.on('logprobs.content.delta', () => deltas++);
  const done = await stream.finalChatCompletion();
  const ch = done.choices[0];
  const entries = ch.logprobs?.content ?? [];
  if (entries.length !== N) bad.push(`${entries.length} logprobs entries in the final message, want ${N}`);
  if (done.usage && done.usage.completion_tokens !== undefined && done.usage.completion_tokens !== N)
    bad.push(`usage ${JSON.stringify(done.usage)}`);
  if (entries.map((e) => e.token).join('') !== ch.message.content)
    bad.push(`entries spell ${JSON.stringify(entries.map((e) => e.token).join(''))}, content ${JSON.stringify(ch.message.content)}`);
  if (ch.message.role !== 'assistant') bad.push(`role ${ch.message.role}`);
  if (ch.finish_reason !== 'length') bad.push(`finish_reason ${ch.finish_reason}`);
  if (deltas === 0) bad.push('no logprobs.content.delta events');
  return bad;
});

let whole;
await check('SDK chat.completions.create() whole: the same reply and entries as the stream', async () => {
  whole = await client.chat.completions.create(body);
  const ch = whole.choices[0];
  const bad = [];
  if (ch.logprobs.content.length !== N) bad.push(`${ch.logprobs.content.length} entries`);
  if (whole.usage.completion_tokens !== N) bad.push(`usage ${JSON.stringify(whole.usage)}`);
  const now = Date.now() / 1000;
  if (Math.abs(whole.created - now) > 5) bad.push(`created ${whole.created}, now ${now}`);
  return bad;
});

await check('SDK chat.completions.create({stream: true}): chunks add up to the whole reply', async () => {
  const s = await client.chat.completions.create({ ...body, stream: true });
  let text = '';
  let n = 0;
  let roles = 0;
  for await (const c of s) {
    for (const ch of c.choices) {
      text += ch.delta?.content ?? '';
      n += ch.logprobs?.content?.length ?? 0;
      roles += ch.delta?.role ? 1 : 0;
    }
  }
  const bad = [];
  if (whole && text !== whole.choices[0].message.content) bad.push(`text ${JSON.stringify(text)}`);
  if (n !== N) bad.push(`${n} entries`);
  if (roles !== 1) bad.push(`${roles} chunks with a role`);
  return bad;
});

await check('SDK models.list() and models.retrieve()', async () => {
  const bad = [];
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  if (ids.length !== 1 || ids[0] !== modelId) bad.push(`list ${JSON.stringify(ids)}`);
  const m = await client.models.retrieve(modelId);
  if (m.id !== modelId || m.object !== 'model') bad.push(`retrieve ${JSON.stringify(m)}`);
  try {
    await client.models.retrieve('no-such-model');
    bad.push('an unknown model was found');
  } catch (e) {
    if (!(e instanceof OpenAI.NotFoundError) || e.code !== 'model_not_found')
      bad.push(`unknown model: ${e.constructor.name} ${e.status} ${e.code}`);
  }
  return bad;
});

await check('SDK completions.create() with max_completion_tokens: that many tokens (it was read on chat only)', async () => {
  const r = await client.completions.create({ model: modelId, prompt: 'Once upon a time', max_completion_tokens: 4, temperature: 0 });
  const bad = [];
  if (r.usage.completion_tokens !== 4) bad.push(`usage ${JSON.stringify(r.usage)}`);
  if (r.choices[0].finish_reason !== 'length') bad.push(`finish_reason ${r.choices[0].finish_reason}`);
  return bad;
});

await check('SDK: a llama-server field tokscope does not run is a BadRequestError naming it, never ignored', async () => {
  const bad = [];
  for (const [k, v] of [['dynatemp_range', 0.5], ['grammar', 'root ::= "a"'], ['mirostat', 1]]) {
    try {
      await client.chat.completions.create({ ...body, [k]: v });
      bad.push(`${k}: accepted`);
    } catch (e) {
      if (!(e instanceof OpenAI.BadRequestError) || e.param !== k) bad.push(`${k}: ${e.constructor.name} ${e.status} ${e.param}`);
    }
  }
  const r = await client.chat.completions.create({ ...body, mirostat: 2, seed: 1, temperature: 1 });
  if (r.choices[0].message.content === undefined) bad.push('mirostat 2 refused');
  const d = await client.chat.completions.create({ ...body, dry_multiplier: 0.8, dry_sequence_breakers: ['\n'], seed: 1 });
  if (d.choices[0].message.content === undefined) bad.push('DRY refused');
  return bad;
});

await check('SDK completions streamed with logprobs: text_offset counts from the reply\'s start, as the whole reply\'s (each chunk restarted at 0)', async () => {
  const req = { model: modelId, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 1 };
  const w = await client.completions.create(req);
  const s = await client.completions.create({ ...req, stream: true });
  const offs = [];
  const toks = [];
  for await (const c of s) {
    for (const ch of c.choices) {
      offs.push(...(ch.logprobs?.text_offset ?? []));
      toks.push(...(ch.logprobs?.tokens ?? []));
    }
  }
  const bad = [];
  if (JSON.stringify(toks) !== JSON.stringify(w.choices[0].logprobs.tokens)) bad.push(`tokens ${JSON.stringify(toks)}`);
  if (JSON.stringify(offs) !== JSON.stringify(w.choices[0].logprobs.text_offset))
    bad.push(`streamed text_offset ${JSON.stringify(offs)}, whole ${JSON.stringify(w.choices[0].logprobs.text_offset)}`);
  return bad;
});
