#!/usr/bin/env node
// meridian, installed from npm: this runs the binary of the package for
// this platform, which npm installed beside this one as an optional
// dependency (each platform's package says which os and cpu it is for).
// Nothing is downloaded at install time or when it runs.
"use strict";

const { spawnSync } = require("node:child_process");
const { constants } = require("node:os");

const packages = {
  "linux-x64": "@meridian-gw/meridian-linux-x64",
  "linux-arm64": "@meridian-gw/meridian-linux-arm64",
  "darwin-x64": "@meridian-gw/meridian-darwin-x64",
  "darwin-arm64": "@meridian-gw/meridian-darwin-arm64",
  "win32-x64": "@meridian-gw/meridian-win32-x64",
  "win32-arm64": "@meridian-gw/meridian-win32-arm64",
};

const platform = `${process.platform}-${process.arch}`;
const pkg = packages[platform];
if (!pkg) {
  console.error(`meridian: there is no build for ${platform}; the builds are for ${Object.keys(packages).join(", ")}`);
  process.exit(1);
}
let binary;
try {
  binary = require.resolve(`${pkg}/bin/meridian${process.platform === "win32" ? ".exe" : ""}`);
} catch {
  console.error(`meridian: ${pkg} is not installed: npm leaves optional dependencies out when told to (--omit=optional, --no-optional); install again without that`);
  process.exit(1);
}
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  console.error(`meridian: ${run.error.message}`);
  process.exit(1);
}
process.exit(run.status ?? 128 + (constants.signals[run.signal] ?? 0));
