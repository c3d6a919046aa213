#!/usr/bin/env node
// Runs the prebuilt mcp-sqlite-memory server for this platform, with the
// worker beside it. Used twice: as the npm package's bin (the binaries are
// in the optional dependency mcp-sqlite-memory-<platform>-<arch>) and in
// release folders that keep them next to this file, in <platform>-<arch>/.
//
// The server speaks MCP on stdio, so stdio is handed to it untouched
// (inherited, never piped through this process); signals are passed on and
// its exit status (or the signal that ended it) becomes ours.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');

const key = `${process.platform}-${process.arch}`;
const exe = process.platform === 'win32' ? '.exe' : '';
const name = 'mcp-sqlite-memory' + exe;
const supported = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];

function binary() {
  const override = process.env.MCP_SQLITE_MEMORY_BINARY;
  if (override) return override;
  const beside = path.join(__dirname, key, name);
  if (fs.existsSync(beside)) return beside;
  const pkg = `mcp-sqlite-memory-${key}`;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'bin', name);
  } catch (e) {
    const hint = supported.includes(key)
      ? `the package ${pkg} was not installed with it (was it installed with --omit=optional or --no-optional?); reinstall: npm install mcp-sqlite-memory`
      : `there is no prebuilt binary for ${key} (there are for ${supported.join(', ')}); build from source: go install github.com/mcp-sqlite-memory/mcp-sqlite-memory/cmd/mcp-sqlite-memory@latest github.com/mcp-sqlite-memory/mcp-sqlite-memory/cmd/mcp-sqlite-memory-worker@latest`;
    process.stderr.write(`mcp-sqlite-memory: no server binary for ${key}: ${hint}\n`);
    process.exit(1);
  }
}

const bin = binary();
const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });

const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const sig of forwarded) {
  process.on(sig, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
  });
}

child.on('error', (err) => {
  process.stderr.write(`mcp-sqlite-memory: could not start ${bin}: ${err.message}\n`);
  process.exit(127);
});

child.on('exit', (code, signal) => {
  if (signal) {
    // End the same way, so whoever started us sees the signal.
    for (const sig of forwarded) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
