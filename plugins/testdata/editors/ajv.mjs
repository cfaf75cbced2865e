// ajv.mjs SCHEMA DOC: validates the YAML file DOC against the JSON Schema
// SCHEMA (draft 2020-12) with ajv, and prints every error as JSON lines.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import YAML from "yaml";

const [schemaFile, docFile] = process.argv.slice(2);
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, "utf8")));
validate(YAML.parse(readFileSync(docFile, "utf8")));
for (const e of validate.errors ?? []) {
  console.log(JSON.stringify({ path: e.instancePath, keyword: e.keyword, params: e.params, message: e.message }));
}
