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
// tables, as LibreDWG read them, so the host can say what the DXF lost; "layers" maps each layer
// to its flag word (R2000+: bit 2 means off) and colour index (R13/R14: negative means off), as
// this LibreDWG build writes every layer as off into its DXF; "texts" gives each text-bearing entity's
// text as the decoded drawing holds it ([handle, kind, value, is_bytes]) and "texts_unread" those whose
// text could not be read ([handle, kind]), as the DXF writer can garble texts holding a line break.
// The process ends when stdin closes.
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

// Each drawing is read by a fresh instance of the module (compiled once): LibreDWG's DXF writer can
// read past the end of a string into memory left by what it read before, so a reused instance made
// a drawing's text depend on the drawings converted earlier in the same process.
const compiled = await WebAssembly.compile(fs.readFileSync(modulePath.replace(/\.js$/, ".wasm")));

function instantiate() {
  return new Promise((resolve, reject) => {
    // the module awaits what this returns: the exports, as its own receiveInstance gives them
    const instantiateWasm = (imports, receive) =>
      WebAssembly.instantiate(compiled, imports).then((instance) => receive(instance, compiled));
    createModule({ print: keep, printErr: keep, instantiateWasm }).then(resolve, reject);
  });
}

let instanceMs = Date.now();
let wasm = await instantiate();
instanceMs = Date.now() - instanceMs; // what the instance that reads the next drawing took to make
const SUBENTITIES = new Set(["BLOCK", "ENDBLK", "SEQEND", "ATTRIB"]);
const UNKNOWN_ENTITY = 65534; // LibreDWG's type for entities of classes it does not know

function inventory(m, data) {
  const model = {};
  const other = {};
  const objects = {};
  const layers = {};
  const proxies = [];
  const texts = { read: [], unread: [] };
  const layerNames = new Map();
  const ownerNames = new Map();
  const n = m.dwg_get_num_objects(data);
  for (let i = 0; i < n; i++) {
    const obj = m.dwg_get_object(data, i);
    if (!obj) continue;
    const name = m.dwg_object_get_dxfname(obj);
    if (m.dwg_object_get_supertype(obj) !== 0) {
      if (name === "LAYER") {
        const tio = m.dwg_object_to_object_tio(obj);
        const layer = tio ? m.dwg_dynapi_entity_value(tio, "name") : null;
        const flags = tio ? m.dwg_dynapi_entity_value(tio, "flag0") : null;
        if (layer && layer.success) layerNames.set(hex(m.dwg_obj_get_handle_value(obj)), String(layer.data));
        const color = tio ? m.dwg_dynapi_entity_value(tio, "color") : null;
        const index = color && color.success && color.data ? Number(color.data.index) : 0;
        if (layer && layer.success && flags && flags.success) layers[String(layer.data)] = [Number(flags.data), index];
      } else if (name && !m.dwg_obj_is_control(obj) && !m.dwg_obj_is_table(obj)) {
        objects[name] = (objects[name] || 0) + 1;
      }
      continue;
    }
    const tio = m.dwg_object_to_entity_tio(obj);
    const field = name && name.startsWith("DIMENSION") ? "user_text" : TEXT_FIELDS[name];
    if (field) readText(m, obj, tio, name, field, texts);
    if (m.dwg_obj_is_subentity(obj)) continue;
    if (!name || SUBENTITIES.has(name) || name.startsWith("VERTEX")) continue;
    const owner = tio ? m.dwg_entity_owner(tio) : 0;
    let ownerName = ownerNames.get(owner);
    if (ownerName === undefined) {
      const value = owner ? m.dwg_dynapi_entity_value(owner, "name") : null;
      ownerName = value && value.success ? String(value.data) : "";
      ownerNames.set(owner, ownerName);
    }
    const inModel = ownerName.toUpperCase() === "*MODEL_SPACE";
    const counts = inModel ? model : other;
    counts[name] = (counts[name] || 0) + 1;
    if (inModel) proxies.push({ name, index: i, handle: hex(m.dwg_obj_get_handle_value(obj)) });
  }
  return { model, other, objects, layers, proxies, layerNames, texts };
}

// The string field that holds each text-bearing entity's text in LibreDWG's structs.
const TEXT_FIELDS = {
  TEXT: "text_value",
  ATTRIB: "text_value",
  ATTDEF: "default_value",
  MTEXT: "text",
  TOLERANCE: "text_value",
}; // and DIMENSION_*: "user_text"

// An entity's text as the decoded drawing holds it, not as the DXF writer wrote it: LibreDWG's writer
// can add stray characters after a text holding a line break (it reads past the end of the string it
// escaped), so the host compares the two. Before R2007 the value is the drawing's code-page bytes
// (as latin1 characters, flagged 1), from R2007 on the text itself (0).
function readText(m, obj, tio, name, field, texts) {
  const handle = hex(m.dwg_obj_get_handle_value(obj));
  const value = tio ? m.dwg_dynapi_entity_value(tio, field) : null;
  if (!value || !value.success) {
    texts.unread.push([handle, name]);
  } else if (value.bin) {
    texts.read.push([handle, name, Buffer.from(value.bin).toString("latin1"), 1]);
  } else {
    texts.read.push([handle, name, value.data === null || value.data === undefined ? "" : String(value.data), 0]);
  }
}

function hex(value) {
  return value === null || value === undefined ? "" : BigInt(value).toString(16).toUpperCase();
}

// Model-space entities that LibreDWG leaves out of its DXF (other applications' classes, proxies,
// kinds its DXF writer skips for the release) but that carry proxy graphics are written as
// ACAD_PROXY_ENTITY with those graphics, as AutoCAD writes such entities to DXF.
function proxyOf(m, data, record) {
  const obj = m.dwg_get_object(data, record.index);
  const graphics = obj ? m.dwg_entity_get_preview(obj) : null;
  if (!graphics || !graphics.data || !graphics.data.length) return null;
  const entity = m.dwg_object_to_entity(obj);
  const layer = entity ? m.dwg_object_entity_get_layer_object_ref(entity) : null;
  const type = m.dwg_object_get_type(obj);
  const cls = type >= 500 ? m.dwg_get_class(data, type - 500) : null;
  return {
    ...record,
    layer: layer ? hex(layer.absolute_ref) : "",
    type,
    version: cls ? ((cls.maint_version || 0) << 16) | (cls.dwg_version || 0) : 0,
    graphics: graphics.data,
  };
}

// The handle (5) right after each object's type (0), as LibreDWG writes every object: one regular
// expression over the text, ~10x quicker than scan(), which runs only when an entity is missing.
const OBJECT_HANDLE = /\n  0\r?\n[^\r\n]*\r?\n  5\r?\n([0-9A-Fa-f]+)\r?\n/g;

function addProxies(text, found, m, data) {
  const quick = new Set();
  for (const match of text.matchAll(OBJECT_HANDLE)) quick.add(match[1].toUpperCase());
  if (found.proxies.every((record) => quick.has(record.handle))) return { text, proxied: {} };
  const present = new Set(); // the handle (5) first in each object, wherever it is
  const entities = scan(text);
  for (const entity of entities) if (entity.handle) present.add(entity.handle.toUpperCase());
  const missing = found.proxies
    .filter((record) => !present.has(record.handle))
    .map((record) => proxyOf(m, data, record))
    .filter((proxy) => proxy !== null);
  if (!missing.length) return { text, proxied: {} };
  const nl = text.includes("\r\n") ? "\r\n" : "\n";
  const version = (text.match(/\$ACADVER\r?\n *1\r?\n(AC\d+)/) || [])[1] || "AC1015";
  const lengthCode = version >= "AC1027" ? "160" : " 92";
  const ends = entities.filter((entity) => entity.type === "ENDSEC" && entity.section === "ENTITIES");
  if (!ends.length) return { text, proxied: {} };
  const at = ends[0].start;
  const proxied = {};
  const parts = [];
  for (const p of missing) {
    const layer = found.layerNames.get(p.layer) || "0";
    const tags = ["  0", "ACAD_PROXY_ENTITY", "  5", p.handle, "100", "AcDbEntity", "  8", asText(layer, version)];
    tags.push(lengthCode, String(p.graphics.length));
    const graphics = Buffer.from(p.graphics).toString("hex").toUpperCase();
    for (let i = 0; i < graphics.length; i += 254) tags.push("310", graphics.slice(i, i + 254));
    tags.push("100", "AcDbProxyEntity", " 90", "498", " 91", String(p.type), " 95", String(p.version));
    tags.push(" 70", "0", " 93", "0", " 94", "0");
    parts.push(tags.join(nl) + nl);
    proxied[p.name] = (proxied[p.name] || 0) + 1;
  }
  return { text: text.slice(0, at) + parts.join("") + text.slice(at), proxied };
}

// A surface without its transformation matrices (LibreDWG did not decode them) stops ezdxf from
// reading the whole file: such entities are left out (the host reports them as not carried over).
// ezdxf reads each matrix as the 16 values of one group code in the surface's own subclass.
const MATRICES = {
  EXTRUDEDSURFACE: ["AcDbExtrudedSurface", ["40", "46", "47"]],
  LOFTEDSURFACE: ["AcDbLoftedSurface", ["40"]],
  REVOLVEDSURFACE: ["AcDbRevolvedSurface", ["42"]],
  SWEPTSURFACE: ["AcDbSweptSurface", ["40", "41", "46", "47"]],
};

function dropUnreadable(text) {
  if (!/\nAcDb(Extruded|Lofted|Revolved|Swept)Surface\r?\n/.test(text)) return text; // no scan needed
  const drop = scan(text).filter((entity) => {
    const wanted = MATRICES[entity.type];
    return wanted && entity.section === "ENTITIES" && wanted[1].some((code) => entity.matrix[code] !== 16);
  });
  let out = text;
  for (const entity of drop.reverse()) out = out.slice(0, entity.start) + out.slice(entity.end);
  return out;
}

// LibreDWG's DXF of pre-R13 drawings can leave a POLYLINE without its VERTEX run or SEQEND,
// or an INSERT announcing attributes without SEQEND, which stops ezdxf from reading the file: a
// POLYLINE without vertices is left out (reported as not carried over), a missing SEQEND is
// added, a VERTEX without its POLYLINE is left out.
function repairSequences(text) {
  const version = (text.match(/\$ACADVER\r?\n *1\r?\n(AC[\d.]+)/) || [])[1] || "";
  if (version >= "AC1012" && version.startsWith("AC10")) return text; // seen in pre-R13 drawings only
  const objects = scan(text);
  const edits = []; // [start, end, replacement]
  const nl = text.includes("\r\n") ? "\r\n" : "\n";
  for (let i = 0; i < objects.length; i++) {
    const object = objects[i];
    if (object.section !== "ENTITIES" && object.section !== "BLOCKS") continue;
    if (object.type === "POLYLINE") {
      let j = i + 1;
      while (j < objects.length && objects[j].type === "VERTEX") j++;
      if (j === i + 1) {
        const next = objects[j];
        const end = next && next.type === "SEQEND" ? next.end : object.end;
        edits.push([object.start, end, ""]);
      } else if (!objects[j] || objects[j].type !== "SEQEND") {
        edits.push([objects[j - 1].end, objects[j - 1].end, `  0${nl}SEQEND${nl}`]);
      }
      i = j - 1;
    } else if (object.type === "INSERT" && object.follow) {
      let j = i + 1;
      while (j < objects.length && objects[j].type === "ATTRIB") j++;
      if (!objects[j] || objects[j].type !== "SEQEND") {
        edits.push([objects[j - 1].end, objects[j - 1].end, `  0${nl}SEQEND${nl}`]);
      }
      i = j - 1;
    } else if (object.type === "VERTEX") {
      edits.push([object.start, object.end, ""]);
    }
  }
  let out = text;
  for (const [start, end, replacement] of edits.reverse()) out = out.slice(0, start) + replacement + out.slice(end);
  return out;
}

// Each object of a DXF text (read as code/value line pairs): its type, handle, section, where it
// starts and ends, and for surfaces how many values each matrix code has in their own subclass.
function scan(text) {
  const objects = [];
  const line = /([^\r\n]*)\r?\n/g;
  let current = null;
  let section = "";
  let subclass = "";
  for (;;) {
    const start = line.lastIndex;
    const code = line.exec(text);
    const value = code && line.exec(text);
    if (!value) break;
    const number = code[1].trim();
    const data = value[1].trim();
    if (number === "0") {
      if (current) current.end = start;
      current = { type: data, start, end: text.length, section, handle: "", matrix: {}, follow: false };
      objects.push(current);
      subclass = "";
      if (data === "ENDSEC") section = "";
    } else if (current) {
      if (number === "2" && current.type === "SECTION") section = current.section = data;
      else if (number === "5" && !current.handle) current.handle = data;
      else if (number === "66" && current.type === "INSERT") current.follow = Number(data) !== 0;
      else if (number === "100") subclass = data;
      else if (MATRICES[current.type] && subclass === MATRICES[current.type][0]) {
        current.matrix[number] = (current.matrix[number] || 0) + 1;
      }
    }
  }
  return objects;
}

// the DXF text is handled byte for byte (latin1); names are UTF-8 from R2007 on, \U+ escapes before
function asText(name, version) {
  if (/^[\x20-\x7e]*$/.test(name)) return name;
  if (version >= "AC1021") return Buffer.from(name, "utf8").toString("latin1");
  return [...name].map((c) => (c.charCodeAt(0) < 128 ? c : "\\U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0"))).join("");
}

// The preview image a drawing carries (hundreds of KB in some R2004+ files) is decoded and written
// into the DXF as hex, then thrown away by ezdxf on load: in R2004 and later LibreDWG finds it by the
// address at 0x0D of the file header, so a zero there skips it. Measured on LibreDWG's test drawings:
// the DXF is otherwise the same, and writing it takes up to 3.5x less time.
const PREVIEW_ADDRESS = 0x0d;
function withoutPreview(bytes) {
  const version = bytes.subarray(0, 6).toString("latin1");
  if (bytes.length > 0x80 && version >= "AC1018" && version.startsWith("AC10")) {
    bytes.fill(0, PREVIEW_ADDRESS, PREVIEW_ADDRESS + 4);
  }
  return bytes;
}

function convert(request) {
  const m = wasm;
  const answer = { id: request.id };
  const input = "in.dwg";
  const output = "out.dxf";
  m.FS.writeFile(input, withoutPreview(fs.readFileSync(request.dwg)));
  try {
    let started = Date.now();
    const read = m.dwg_read_file(input);
    const code = read.error >>> 0;
    if (!read.data || code >= 128) {
      if (read.data) m.dwg_free(read.data);
      return { ...answer, ok: false, stage: "read", code, error: "LibreDWG could not read the file" };
    }
    let found;
    let patched;
    let readMs;
    let written;
    try {
      found = inventory(m, read.data);
      readMs = Date.now() - started;
      started = Date.now();
      written = m.dwg_write_dxf(input, output) >>> 0;
      if (!m.FS.analyzePath(output, false).exists || written >= 128) {
        return { ...answer, ok: false, stage: "write", code: written, error: "LibreDWG could not write DXF" };
      }
      const text = repairSequences(dropUnreadable(Buffer.from(m.FS.readFile(output)).toString("latin1")));
      patched = addProxies(text, found, m, read.data);
    } finally {
      m.dwg_free(read.data);
    }
    fs.writeFileSync(request.dxf, Buffer.from(patched.text, "latin1"));
    for (const [name, count] of Object.entries(patched.proxied)) {
      found.model[name] -= count;
      if (!found.model[name]) delete found.model[name];
      found.model.ACAD_PROXY_ENTITY = (found.model.ACAD_PROXY_ENTITY || 0) + count;
    }
    return {
      ...answer,
      ok: true,
      code,
      model: found.model,
      other: found.other,
      objects: found.objects,
      layers: found.layers,
      proxied: patched.proxied,
      texts: found.texts.read,
      texts_unread: found.texts.unread,
      read_ms: readMs,
      write_ms: Date.now() - started,
      instance_ms: instanceMs,
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
    // a trap (memory access out of bounds...): the instance is replaced below, as after every drawing
    answer = { id: request.id, ok: false, stage: "crash", code: -1, error: String(err && err.message || err) };
  }
  answer.log = log;
  process.stdout.write(JSON.stringify(answer) + "\n");
  // the next drawing gets a fresh instance, made while the host reads this one's DXF
  wasm = null;
  try {
    const started = Date.now();
    wasm = await instantiate();
    instanceMs = Date.now() - started;
  } catch (again) {
    process.stderr.write(`could not start LibreDWG again: ${again}\n`);
    process.exit(1);
  }
}
// an answer can be hundreds of KB (a drawing's texts) still on its way into the pipe: exit after it
process.stdout.write("", () => process.exit(0));
