// The mcm extension's client: starts `mcmpart lsp` (the path is the
// `mcm.server.path` setting) and talks to it over standard input and output.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("mcm").get("server.path", "mcmpart");
  const run = { command, args: ["lsp"], transport: TransportKind.stdio };
  client = new LanguageClient(
    "mcm",
    "mcm language server",
    { run, debug: run },
    { documentSelector: [{ scheme: "file", language: "mcm" }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
