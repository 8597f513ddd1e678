import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from './config/environment';
import { createSuperAdmin } from './auth/create-super-admin';

/** `npm run cli -- <command>`: operator commands. */
async function main(argv: string[]): Promise<void> {
  const program = new Command('cli').exitOverride();
  program
    .command('create-super-admin')
    .description('Create the first super admin; prints the new user id')
    .requiredOption('--email <email>')
    .requiredOption('--password <password>', 'at least 8 characters')
    .requiredOption('--name <name>')
    .action(async (options: { email: string; password: string; name: string }) => {
      const id = await createSuperAdmin(loadConfig(), options);
      process.stdout.write(`${id}\n`);
    });
  await program.parseAsync(argv);
}

main(process.argv).then(
  () => process.exit(0),
  (error) => {
    if (error instanceof CommanderError) process.exit(error.exitCode || 1);
    console.error(error instanceof ConfigError || error?.userFacing ? error.message : error);
    process.exit(1);
  },
);
