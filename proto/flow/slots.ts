/**
 * At most `slots` pieces of work at once, and at most `waiting` more in line; past that, `full()` is thrown at
 * once. A piece that ends (or fails) hands its slot to the next in line. Used where work is costly in CPU or
 * memory and anyone may ask for it: password hashes (relay), GGUF header reads (relay), images (agent).
 */
export class Slots {
  private running = 0;
  private readonly line: (() => void)[] = [];

  constructor(
    private readonly slots: number,
    private readonly waiting = Number.POSITIVE_INFINITY,
    private readonly full: () => Error = () => new Error("too much work waiting"),
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) {
      if (this.line.length >= this.waiting) throw this.full();
      await new Promise<void>((resolve) => this.line.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      const next = this.line.shift();
      if (next) next();
      else this.running--;
    }
  }
}
