import type { CommandModule } from "yargs";
import { auditCommand } from "./audit-command.js";
import { requestCommand } from "./request-command.js";
import { overviewCommand } from "./overview-command.js";
import { keyCommand } from "./key-command.js";
import { alertCommand } from "./alert-command.js";
import { hubCommand } from "./hub-command.js";
import { machineCommand } from "./machine-command.js";
import { orgCommand } from "./org-command.js";
import { stackCommand } from "./stack-command.js";
import { userCommand } from "./user-command.js";

export const adminCommand: CommandModule = {
  command: "admin <command>",
  describe: "Administer a relay (organizations, users, machines, stacks, keys, the audit log, the request log)",
  builder: (y) => y.command(orgCommand).command(machineCommand).command(stackCommand).command(keyCommand).command(userCommand).command(auditCommand).command(requestCommand).command(overviewCommand).command(alertCommand).command(hubCommand).demandCommand(1).strict(),
  handler: () => {},
};
