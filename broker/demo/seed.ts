/**
 * The demo's example files: written into the demo Nextcloud's folder on first run so
 * an agent has something to ask for. An existing file is never overwritten (the owner
 * may have edited it, or an agent may have pushed a new version).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** User-relative path → content. */
export const DEMO_FILES: ReadonlyMap<string, string> = new Map([
  [
    'Documents/welcome.md',
    [
      '# Welcome to the Nextcloud Access Broker demo',
      '',
      'This file lives in a local, fake Nextcloud (./data/demo-cloud).',
      'An agent can see it only after you approve its request in the broker terminal,',
      'by typing `approve N` with the number N shown in the request.',
      '',
    ].join('\n'),
  ],
  ['Documents/notes.txt', 'Shopping: coffee, oat milk, bread.\nCall the plumber on Tuesday.\n'],
  [
    'Projects/plan.md',
    [
      '# Project plan',
      '',
      '1. Ask for access with a reason.',
      '2. Wait for the owner to approve.',
      '3. Fetch, edit and push back through the `broker` CLI.',
      '',
    ].join('\n'),
  ],
  ['Photos/README.txt', 'No photos in the demo, only this note. Real instances keep them here.\n'],
]);

/** Writes every demo file that does not exist yet; returns the paths it created. */
export async function seedDemoCloud(root: string): Promise<string[]> {
  const created: string[] = [];
  for (const [path, content] of DEMO_FILES) {
    const file = join(root, ...path.split('/'));
    await mkdir(dirname(file), { recursive: true });
    try {
      // 'wx': create only; an existing file (edited or pushed since) is left as it is.
      await writeFile(file, content, { flag: 'wx' });
      created.push(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return created;
}
