// Runs the `broker` CLI from source, exactly as bin/broker.js runs the compiled one
// (cli/main.ts itself only exports main()).
import { main } from '../../cli/main.js';

process.exitCode = await main(process.argv.slice(2));
