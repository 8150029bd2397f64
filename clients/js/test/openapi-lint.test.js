// openapi.yaml against Redocly's recommended lint rules (@redocly/openapi-core,
// the engine of `redocly lint`, from the lockfile: no network), with the
// findings the repository's .redocly.lint-ignore.yaml explains ignored.
// No error and no warning may remain (a missing servers entry was an error;
// 38 unused components were warnings).

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { lint, loadConfig } from "@redocly/openapi-core";
import { repoDir } from "./harness.js";

test("openapi.yaml passes Redocly's recommended lint", async () => {
  const config = await loadConfig({});
  config.styleguide.resolveIgnore(join(repoDir, ".redocly.lint-ignore.yaml"));
  const problems = await lint({ ref: join(repoDir, "openapi.yaml"), config });
  const left = problems.filter((p) => !p.ignored);
  const errors = left.filter((p) => p.severity === "error");
  assert.deepEqual(errors.map((p) => `${p.ruleId}: ${p.message} ${p.location?.[0]?.pointer ?? ""}`), [], "lint errors");
  const warnings = left.filter((p) => p.severity !== "error");
  assert.deepEqual(warnings.map((p) => `${p.ruleId}: ${p.message} ${p.location?.[0]?.pointer ?? ""}`), [], "lint warnings");
});
