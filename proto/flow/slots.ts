/**
 * At most `slots` pieces of work at once, and at most `waiting` more in line; past that, `full()` is thrown at
 * once. A piece that ends (or fails) hands its slot to the next in line. Used where work is costly in CPU or
 * memory and anyone may ask for it: password hashes (relay), GGUF header reads (relay), images (agent).
 *
 * With `reserved` places, work asked `first` waits in a line of its own of that many places, served before the
 * other: those others, however many ask, cannot fill it (sign-ins from an address a person used before).
 */
export class Slots {
  private running = 0;
  private readonly line: (() => void)[] = [];
  private readonly firstLine: (() => void)[] = [];

  constructor(
    private readonly slots: number,
    private readonly waiting = Number.POSITIVE_INFINITY,
    private readonly full: () => Error = () => new Error("too much work waiting"),
    private readonly reserved = 0,
  ) {}

  async run<T>(work: () => Promise<T>, first = false): Promise<T> {
    if (this.running >= this.slots) {
      const line = first ? this.firstLine : this.line;
      if (line.length >= (first ? this.reserved : this.waiting)) throw this.full();
      await new Promise<void>((resolve) => line.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      const next = this.firstLine.shift() ?? this.line.shift();
      if (next) next();
      else this.running--;
    }
  }
}
