// openapi.yaml against Redocly's recommended lint rules (@redocly/openapi-core,
// the engine of `redocly lint`, from the lockfile: no network), with the
// findings the repository's .redocly.lint-ignore.yaml explains ignored.
// No error may remain (a missing servers entry was one), and no warning
// beyond the command args schemas that only the verb table reaches.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { lint, loadConfig } from "@redocly/openapi-core";
import { repoDir } from "./harness.js";

// The per-verb args schemas (CreateNodeArgs, ...) are reached only through
// a Markdown table until CommandEnvelope names them in a oneOf.
const pendingArgs = /^Component: "[A-Za-z]+Args" is never used\.$/;

test("openapi.yaml passes Redocly's recommended lint", async () => {
  const config = await loadConfig({});
  config.styleguide.resolveIgnore(join(repoDir, ".redocly.lint-ignore.yaml"));
  const problems = await lint({ ref: join(repoDir, "openapi.yaml"), config });
  const left = problems.filter((p) => !p.ignored);
  const errors = left.filter((p) => p.severity === "error");
  assert.deepEqual(errors.map((p) => `${p.ruleId}: ${p.message} ${p.location?.[0]?.pointer ?? ""}`), [], "lint errors");
  const warnings = left.filter((p) => p.severity !== "error" && !(p.ruleId === "no-unused-components" && pendingArgs.test(p.message)));
  assert.deepEqual(warnings.map((p) => `${p.ruleId}: ${p.message} ${p.location?.[0]?.pointer ?? ""}`), [], "lint warnings");
});
