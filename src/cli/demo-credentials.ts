/**
 * Reading the demo credentials file, `<data dir>/demo-credentials.json`, which the demo set-up (demo.ts)
 * writes. Apart from it, so that a command calling a live server's admin API with the demo token loads no
 * seeder or store.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';

export interface DemoCredentials {
  readonly apiToken: string;
  /** The store's administrative password; none in gateway mode, where the core verifies credentials. */
  readonly adminPassword?: string;
  /**
   * The demo user (`DEMO_USER`) and its password, which logon's example uses; none in gateway mode, nor in a
   * file written before there was a demo user.
   */
  readonly userNumber?: number;
  readonly userPassword?: string;
}

export function demoCredentialsFile(config: Config): string {
  return join(config.dataDir, 'demo-credentials.json');
}

export function readDemoCredentials(config: Config): DemoCredentials | undefined {
  const file = demoCredentialsFile(config);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as DemoCredentials;
}
