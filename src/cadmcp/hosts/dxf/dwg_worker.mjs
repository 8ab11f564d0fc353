// DWG -> DXF converter worker for cadmcp's DXF host (run by cadmcp/hosts/dxf/dwg.py).
//
// A separate Node.js process that loads LibreDWG compiled to WebAssembly (the npm package
// @mlightcad/libredwg-web, GPL-3.0) from the path given as its first argument; cadmcp itself
// never links or imports it. One JSON request per stdin line:
//   {"id": 1, "dwg": "/abs/plan.dwg", "dxf": "/abs/out.dxf"}
// one JSON answer per stdout line:
//   {"id": 1, "ok": true, "code": 0, "model": {"LINE": 3}, "other": {...}, "objects": {...}, ...}
//   {"id": 1, "ok": false, "stage": "read", "code": 2048, "error": "...", "log": [...]}
// "model" and "other" count the drawing's entities by DXF name, in model space and elsewhere
// (paper space, block definitions), and "objects" the non-graphical objects outside the
// tables, as LibreDWG read them, so the host can say what the DXF lost. The process ends when stdin closes.
import fs from "node:fs";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const modulePath = process.argv[2];
if (!modulePath) {
  process.stderr.write("usage: node dwg_worker.mjs <libredwg-web.js>\n");
  process.exit(2);
}
const createModule = (await import(pathToFileURL(modulePath).href)).default;
const MAX_LOG = 40;
let log = [];
const keep = (line) => {
  if (log.length < MAX_LOG) log.push(String(line).slice(0, 300));
};

async function instantiate() {
  return createModule({ print: keep, printErr: keep });
}

let wasm = await instantiate();
const SUBENTITIES = new Set(["BLOCK", "ENDBLK", "SEQEND", "ATTRIB"]);

function inventory(m, data) {
  const model = {};
  const other = {};
  const objects = {};
  const ownerNames = new Map();
  const n = m.dwg_get_num_objects(data);
  for (let i = 0; i < n; i++) {
    const obj = m.dwg_get_object(data, i);
    if (!obj) continue;
    const name = m.dwg_object_get_dxfname(obj);
    if (m.dwg_object_get_supertype(obj) !== 0) {
      if (name && !m.dwg_obj_is_control(obj) && !m.dwg_obj_is_table(obj)) objects[name] = (objects[name] || 0) + 1;
      continue;
    }
    if (m.dwg_obj_is_subentity(obj)) continue;
    if (!name || SUBENTITIES.has(name) || name.startsWith("VERTEX")) continue;
    const tio = m.dwg_object_to_entity_tio(obj);
    const owner = tio ? m.dwg_entity_owner(tio) : 0;
    let ownerName = ownerNames.get(owner);
    if (ownerName === undefined) {
      const value = owner ? m.dwg_dynapi_entity_value(owner, "name") : null;
      ownerName = value && value.success ? String(value.data) : "";
      ownerNames.set(owner, ownerName);
    }
    const counts = ownerName.toUpperCase() === "*MODEL_SPACE" ? model : other;
    counts[name] = (counts[name] || 0) + 1;
  }
  return { model, other, objects };
}

function convert(request) {
  const m = wasm;
  const answer = { id: request.id };
  const input = "in.dwg";
  const output = "out.dxf";
  m.FS.writeFile(input, fs.readFileSync(request.dwg));
  try {
    let started = Date.now();
    const read = m.dwg_read_file(input);
    const code = read.error >>> 0;
    if (!read.data || code >= 128) {
      if (read.data) m.dwg_free(read.data);
      return { ...answer, ok: false, stage: "read", code, error: "LibreDWG could not read the file" };
    }
    const counts = inventory(m, read.data);
    m.dwg_free(read.data);
    const readMs = Date.now() - started;
    started = Date.now();
    const written = m.dwg_write_dxf(input, output) >>> 0;
    if (!m.FS.analyzePath(output, false).exists || written >= 128) {
      return { ...answer, ok: false, stage: "write", code: written, error: "LibreDWG could not write DXF" };
    }
    fs.writeFileSync(request.dxf, m.FS.readFile(output));
    return {
      ...answer,
      ok: true,
      code,
      ...counts,
      read_ms: readMs,
      write_ms: Date.now() - started,
      rss: process.memoryUsage().rss,
    };
  } finally {
    for (const name of [input, output]) {
      if (m.FS.analyzePath(name, false).exists) m.FS.unlink(name);
    }
  }
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
for await (const line of lines) {
  if (!line.trim()) continue;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    process.stdout.write(JSON.stringify({ id: null, ok: false, stage: "request", error: "not JSON" }) + "\n");
    continue;
  }
  log = [];
  let answer;
  try {
    answer = convert(request);
  } catch (err) {
    // a trap (memory access out of bounds...) leaves the instance unusable: start a fresh one
    answer = { id: request.id, ok: false, stage: "crash", code: -1, error: String(err && err.message || err) };
    try {
      wasm = await instantiate();
    } catch (again) {
      answer.fatal = String(again);
    }
  }
  answer.log = log;
  process.stdout.write(JSON.stringify(answer) + "\n");
  if (answer.fatal) process.exit(1);
}
process.exit(0);
