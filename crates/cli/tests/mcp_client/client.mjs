// `stepwise mcp` driven by the official MCP TypeScript SDK as a real client
// (crates/cli/tests/mcp_server.rs runs it): list the tools, run a goal
// offline with progress, start a run that writes, approve the paused write.
// Prints one JSON object of what it saw.
import { createRequire } from 'node:module';

const sdk = process.env.MCP_SDK_DIR; // …/node_modules/@modelcontextprotocol/sdk
const require = createRequire(import.meta.url);
const { Client } = require(`${sdk}/dist/cjs/client/index.js`);
const { StdioClientTransport } = require(`${sdk}/dist/cjs/client/stdio.js`);

const env = { ...process.env };
const transport = new StdioClientTransport({
  command: process.env.STEPWISE_BIN,
  args: ['mcp'],
  env,
  stderr: 'pipe',
});
const client = new Client({ name: 'stepwise-test', version: '1.0.0' });
await client.connect(transport);

const seen = {};
const { tools } = await client.listTools();
seen.tools = tools.map((t) => ({
  name: t.name,
  readOnly: t.annotations?.readOnlyHint,
  destructive: t.annotations?.destructiveHint,
  hasOutputSchema: !!t.outputSchema,
}));

const progress = [];
const ran = await client.callTool(
  { name: 'run_goal', arguments: { goal: 'What is our latency budget?', notes: process.env.NOTES } },
  undefined,
  { onprogress: (p) => progress.push(p.message), timeout: 120000 },
);
seen.run = { isError: !!ran.isError, status: ran.structuredContent?.status, report: ran.structuredContent?.final_report, runId: ran.structuredContent?.run_id };
seen.progress = progress;

const paused = await client.callTool({
  name: 'run_goal',
  arguments: { goal: 'Save the latency budget', notes: process.env.NOTES, plan: process.env.PLAN, workspace: process.env.WORKSPACE },
});
seen.paused = { status: paused.structuredContent?.status, runId: paused.structuredContent?.run_id };

const listed = await client.callTool({ name: 'list_runs', arguments: { limit: 10 } });
seen.listed = listed.structuredContent?.runs?.map((r) => r.status);

const approved = await client.callTool({ name: 'approve_step', arguments: { run: seen.paused.runId } });
seen.approved = { isError: !!approved.isError, status: approved.structuredContent?.status };

const got = await client.callTool({ name: 'get_run', arguments: { run: seen.paused.runId } });
seen.got = { status: got.structuredContent?.status };

const bad = await client.callTool({ name: 'get_run', arguments: { run: 'run_nope' } });
seen.bad = { isError: !!bad.isError, text: bad.content?.[0]?.text };

await client.close();
console.log(JSON.stringify(seen));
