// Preload for openapi-mcp-server: its tools/list handler fetches https://openapisearch.com/
// live and appends the page text to both tool descriptions. Offline, answer that request
// with an EMPTY body so the real server code can produce its listing.
const path = require('path');
const undici = require(path.join(process.cwd(), 'node_modules', 'undici'));
const agent = new undici.MockAgent();
agent.disableNetConnect();
agent.get('https://openapisearch.com').intercept({ path: '/', method: 'GET' }).reply(200, '').persist();
undici.setGlobalDispatcher(agent);
