/** What the scaled benchmark uses of autocannon (it ships no types). */
declare module "autocannon" {
  interface Options {
    url: string;
    method: string;
    headers: Record<string, string>;
    body: string;
    connections: number;
    duration: number;
  }
  interface Result {
    requests: { total: number };
    non2xx: number;
    errors: number;
    latency: { p50: number; p99: number };
  }
  export default function autocannon(options: Options): Promise<Result>;
}
