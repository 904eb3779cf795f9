'use strict';
// looprail's guard for Node agents, in process: the native addon (looprail.node, built from
// crates/node) and nothing else. See index.d.ts for the API.
const native = require('./looprail.node');

module.exports = { Guard: native.Guard };
