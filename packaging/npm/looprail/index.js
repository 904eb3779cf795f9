'use strict';
// looprail's guard for Node agents, in process. The native addon (looprail.node, built from
// crates/node) keeps each guard by a numeric handle, takes primitive arguments and answers
// `allow` with nothing: a call crosses into Rust for as little as it can. This wrapper gives the
// API of index.d.ts and frees a guard's native side when the guard is collected.
const native = loadAddon();

// The addon beside this file (a package laid out from a source build), else the one in this
// machine's platform package (the published layout).
function loadAddon() {
  const fs = require('node:fs');
  const local = require('node:path').join(__dirname, 'looprail.node');
  if (fs.existsSync(local)) return require(local);
  const platform = require('./platform.js');
  const addon = platform.file('looprail.node', true);
  if (!addon) throw new Error(`looprail: ${platform.missing()}`);
  return require(addon);
}

const ALLOW = Object.freeze({ action: 'allow', message: '', reason: '' });
const released = new FinalizationRegistry((handle) => native.release(handle));

const json = (value) => (typeof value === 'string' ? value : JSON.stringify(value ?? {}));
const time = (nowMs) => (typeof nowMs === 'number' ? nowMs : Date.now());

function checkCall(call) {
  if (typeof call?.id !== 'string' || typeof call?.name !== 'string') {
    throw new TypeError('a call has `id` and `name` (strings) and `arguments`');
  }
}

class Guard {
  constructor(options, handle) {
    this.handle = handle === undefined ? native.create(options) : handle;
    // The last reply's calls, by id: their index names them to the native side.
    this.calls = new Map();
    released.register(this, this.handle);
  }

  static restore(saved, options) {
    return new Guard(undefined, native.restore(saved, options));
  }

  save() {
    return native.save(this.handle);
  }

  userMessage(nowMs) {
    native.userMessage(this.handle, typeof nowMs === 'number' ? nowMs : NaN);
  }

  beforeModel(nowMs) {
    return native.beforeModel(this.handle, time(nowMs)) || ALLOW;
  }

  streamText(delta) {
    return native.streamText(this.handle, String(delta));
  }

  modelResponse(reply, nowMs) {
    if (reply === null || typeof reply !== 'object') throw new TypeError('modelResponse takes a reply object');
    const calls = reply.calls || [];
    // The calls cross flat ([id, name, arguments, ...]): no JSON to write here and parse there.
    const flat = new Array(calls.length * 3);
    const byId = new Map();
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i];
      checkCall(call);
      flat[3 * i] = call.id;
      flat[3 * i + 1] = call.name;
      flat[3 * i + 2] = json(call.arguments);
      byId.set(call.id, i);
    }
    const usage = reply.usage;
    const counts = usage == null ? undefined : [
      usage.inputTokens ?? 0, usage.outputTokens ?? 0, usage.cacheReadTokens ?? 0, usage.cacheWriteTokens ?? 0,
    ];
    const text = reply.text == null ? undefined : reply.text;
    const model = reply.model == null ? undefined : reply.model;
    const verdict = native.modelResponse(this.handle, time(nowMs), flat, text, model, counts);
    this.calls = byId;
    return verdict || ALLOW;
  }

  beforeTool(call) {
    checkCall(call);
    const index = this.calls.get(call.id);
    const verdict = index === undefined
      ? native.beforeTool(this.handle, call.id, call.name, json(call.arguments))
      : native.beforeToolAt(this.handle, index);
    return verdict || ALLOW;
  }

  afterTool(id, output, failed) {
    const index = this.calls.get(id);
    const text = String(output);
    const verdict = index === undefined
      ? native.afterTool(this.handle, String(id), text, Boolean(failed))
      : native.afterToolAt(this.handle, index, text, Boolean(failed));
    return verdict || ALLOW;
  }

  takeEvents() {
    return native.takeEvents(this.handle);
  }
}

module.exports = { Guard };
