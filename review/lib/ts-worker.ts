/**
 * Runs a TypeScript module in a worker thread and resolves with the first message it
 * posts. Worker threads do not inherit tsx's loader, so a small bootstrap registers it
 * (through tsx's public API) before importing the module.
 */
import { Worker } from 'node:worker_threads';

export function runTsWorker<T>(module: URL, workerData: unknown, timeoutMs = 30_000): Promise<T> {
  const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(module.href)}); })`;
  return new Promise<T>((resolve, reject) => {
    const worker = new Worker(boot, { eval: true, workerData });
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`worker ${module.pathname} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    worker.once('message', (message: T) => {
      clearTimeout(timer);
      resolve(message);
    });
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    worker.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${module.pathname} exited with ${code} before answering`));
    });
  });
}
