// Test only (see edicheck_test.go): reads the UN/EDIFACT interchange in the
// file named by the first argument with two independent parsers, the npm
// packages edifact and ts-edifact, and prints what each read as JSON:
// {"edifact": {"segments": [{"name": "UNB", "elements": [["UNOC", "3"], ...]}, ...]},
//  "ts-edifact": {...}}, or {"error": "..."} for a parser that refused it.
'use strict';

const fs = require('fs');

function read(name, parse) {
  try {
    return { segments: parse().map((s) => ({ name: s.name, elements: s.elements })) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

// tsParse reads doc with ts-edifact's Parser, as its Reader does (the
// Reader itself loads message definitions through a module ts-edifact
// does not declare, htmlparser2): a segment per name, an array per element,
// the charset from UNB.
function tsParse(doc) {
  const { Parser } = require('ts-edifact/lib/parser.js');
  const parser = new Parser();
  const result = [];
  let elements, components, unb = false;
  parser.onOpenSegment = (name) => {
    unb = name === 'UNB';
    result.push({ name, elements: (elements = []) });
  };
  parser.onElement = () => elements.push((components = []));
  parser.onComponent = (value) => {
    if (unb) {
      parser.updateCharset(value);
      // ts-edifact 0.0.14 swaps its tokenizer's character classes on a new
      // charset but keeps the class in use until a definition picks one.
      parser.tokenizer.alphanumeric();
      unb = false;
    }
    components.push(value);
  };
  parser.onCloseSegment = () => {};
  const warn = console.warn;
  console.warn = () => {}; // "No segment definition found": none are loaded
  try {
    parser.write(doc);
    parser.end();
  } finally {
    console.warn = warn;
  }
  return result;
}

const doc = fs.readFileSync(process.argv[2], 'latin1');
const out = {
  edifact: read('edifact', () => new (require('edifact/reader.js'))({ autoDetectEncoding: true }).parse(doc)),
  'ts-edifact': read('ts-edifact', () => tsParse(doc)),
};
process.stdout.write(JSON.stringify(out));
