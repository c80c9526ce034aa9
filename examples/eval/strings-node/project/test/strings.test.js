'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify, truncate } = require('../strings.js');

test('slugify lowercases and joins words with dashes', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});

test('slugify drops punctuation and repeated separators', () => {
  assert.strictEqual(slugify('  Runner: a loop, for agents!  '), 'runner-a-loop-for-agents');
});

test('truncate keeps short text', () => {
  assert.strictEqual(truncate('short', 10), 'short');
});

test('truncate cuts long text with an ellipsis', () => {
  assert.strictEqual(truncate('a long sentence here', 10), 'a long se…');
});
