// Validate baton records (JSON Lines on stdin) with the committed JSON Schemas alone.
//
//   baton tail support.replies --from-beginning --idle-timeout 5 | node validate.mjs reply
//
// Prints one line per invalid record and exits 1 if there was any; nothing from baton is
// imported: a consumer in any language needs only schemas/json/.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const record = process.argv[2];
if (!record) {
  console.error("usage: node validate.mjs RECORD   (reply, dead-letter, ticket, ...)");
  process.exit(2);
}
const folder = new URL("../../schemas/json/", import.meta.url);
let schema;
try {
  schema = JSON.parse(readFileSync(fileURLToPath(new URL(`${record}.schema.json`, folder))));
} catch {
  console.error(`no schema for record ${JSON.stringify(record)} in schemas/json/`);
  process.exit(2);
}
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
const valid = ajv.compile(schema);

let line = 0;
let bad = 0;
for await (const text of createInterface({ input: process.stdin })) {
  line += 1;
  if (!text.trim()) continue;
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    bad += 1;
    console.log(`line ${line}: not JSON`);
    continue;
  }
  if (!valid(value)) {
    bad += 1;
    const why = valid.errors.map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
    console.log(`line ${line}: ${why}`);
  }
}
console.error(`${line - bad} valid, ${bad} invalid`);
process.exit(bad ? 1 : 0);
