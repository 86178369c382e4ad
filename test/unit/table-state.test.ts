import { describe, expect, it } from "vitest";
import { fromSearch, INITIAL_TABLE, pageCount, queryOf, rangeText, toggleSort, toPage, toSearch, withSearch, withState } from "../../relay/web/src/components/table-state.js";

// The web application's list tables (issue 21, point 4): what a click or a keystroke asks the relay for.
describe("a list table's state", () => {
  const sorts = ["name", "created_at"] as const;
  const states = ["active", "revoked"] as const;

  it("sorts by a column ascending, then descending, and starts again from the first page", () => {
    const onPage3 = { ...INITIAL_TABLE, page: 3 };
    const byName = toggleSort(onPage3, "name");
    expect([byName.sort, byName.order, byName.page]).toEqual(["name", "asc", 1]);
    expect(toggleSort(byName, "name").order).toBe("desc");
    expect(toggleSort(toggleSort(byName, "name"), "name").order).toBe("asc");
    // Another column sorts ascending first.
    expect(toggleSort(toggleSort(byName, "name"), "created_at")).toMatchObject({ sort: "created_at", order: "asc" });
  });

  it("searches and filters from the first page, and keeps a page within the pages there are", () => {
    const t = { ...INITIAL_TABLE, page: 4 };
    expect(withSearch(t, "gpu")).toMatchObject({ q: "gpu", page: 1 });
    expect(withSearch(t, "")).toBe(t);
    expect(withState(t, "revoked")).toMatchObject({ state: "revoked", page: 1 });
    expect(toPage(t, 99, 123).page).toBe(3);
    expect(toPage(t, 0, 123).page).toBe(1);
    expect([pageCount(0, 50), pageCount(50, 50), pageCount(51, 50), pageCount(10_000, 50)]).toEqual([1, 1, 2, 200]);
  });

  it("asks the relay only for what is set", () => {
    expect(queryOf(INITIAL_TABLE)).toEqual({ page: 1, per_page: 50 });
    expect(queryOf({ ...INITIAL_TABLE, q: "  ci bot ", sort: "name", order: "desc", state: "active", page: 2 })).toEqual({ q: "ci bot", sort: "name", order: "desc", state: "active", page: 2, per_page: 50 });
  });

  it("says which items a page shows", () => {
    expect(rangeText(0, 1, 50)).toBe("none");
    expect(rangeText(123, 1, 50)).toBe("1–50 of 123");
    expect(rangeText(123, 3, 50)).toBe("101–123 of 123");
    expect(rangeText(10_000, 2, 100)).toBe("101–200 of 10,000");
  });

  it("lives in the page's address, and an address says nothing it should not", () => {
    const t = { ...INITIAL_TABLE, q: "gpu box", sort: "name" as const, order: "desc" as const, state: "revoked" as const, page: 2 };
    expect(toSearch(t)).toBe("?q=gpu+box&sort=name&order=desc&state=revoked&page=2");
    expect(fromSearch(toSearch(t), sorts, states)).toEqual(t);
    expect(toSearch(INITIAL_TABLE)).toBe("");
    // A field, state or page it does not know is left out.
    expect(fromSearch("?sort=password_hash&state=everything&page=-3&order=sideways", sorts, states)).toEqual(INITIAL_TABLE);
  });
});
