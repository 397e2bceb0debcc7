// Builds the console: type-checks the TypeScript, then bundles and
// minifies it into one file. `node build.mjs` writes dist/app.js (which
// is committed, so `go build` needs no Node.js); `node build.mjs OUT`
// writes OUT instead, which test/run.sh compares with dist/app.js.
import { execFileSync } from "node:child_process";
import { build } from "esbuild";

const out = process.argv[2] ?? "dist/app.js";
execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "--noEmit", "-p", "."], { stdio: "inherit", cwd: import.meta.dirname });
await build({
  absWorkingDir: import.meta.dirname,
  entryPoints: ["web/src/main.tsx"],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2020",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  outfile: out,
  logLevel: "warning",
});
