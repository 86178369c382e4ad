/** A list answer, as the gateway's lists read. */
export interface List<T> {
  object: "list";
  data: T[];
}
