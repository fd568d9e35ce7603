/**
 * The entry point of the agent's file (dist/broker-cli.mjs): runs at once, however it
 * is started (`node broker-cli.mjs`, or through a symlink or wrapper named `broker`).
 */
import { clientMain } from './main.js';

process.exitCode = await clientMain(process.argv.slice(2));
