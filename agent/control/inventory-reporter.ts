import type { Inventory, Logger } from "../../proto/index.js";

/**
 * Tells the relay what this machine hosts (runtimes, models on disk) when the
 * link comes online and whenever it changes, sending nothing when nothing
 * changed. Reports are built and sent one at a time, in order.
 */
export class InventoryReporter {
  private last = "";
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly build: () => Promise<Inventory>,
    private readonly send: (inventory: Inventory) => void,
    private readonly log: Logger,
  ) {}

  /** A new link: the relay has heard nothing yet, so the next report is sent whatever it holds. */
  linkOnline(): void {
    this.last = "";
    void this.report();
  }

  /** Sends the inventory if it changed since the last one sent on this link. */
  report(): Promise<void> {
    this.chain = this.chain.then(async () => {
      try {
        const inventory = await this.build();
        const json = JSON.stringify(inventory);
        if (json === this.last) return;
        this.last = json;
        this.send(inventory);
      } catch (err) {
        this.log.warn("could not build the inventory for the relay", { err });
      }
    });
    return this.chain;
  }
}
