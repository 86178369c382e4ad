import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Notice } from "./notice.js";

type Page = (props: object) => JSX.Element;

/**
 * A page whose code is its own chunk of the bundle (the export `name` of the module `load` imports), fetched the
 * first time the page is shown (the browser keeps it after): nothing shows until it has come, then the page, with
 * the props it was given. A chunk that cannot be fetched (the relay was upgraded meanwhile, the network dropped)
 * says so, and asks for a reload.
 */
export function lazyPage<M, K extends keyof M>(load: () => Promise<M>, name: K): M[K] {
  let loaded: Page | undefined;
  function LazyPage(props: object) {
    const [failed, setFailed] = useState(false);
    const [, setReady] = useState(false);
    useEffect(() => {
      if (loaded) return;
      let live = true;
      load().then(
        (module) => {
          loaded = module[name] as unknown as Page;
          if (live) setReady(true);
        },
        () => live && setFailed(true),
      );
      return () => {
        live = false;
      };
    }, []);
    if (failed) return <Notice tone="error">This page could not be loaded. Reload the page to try again.</Notice>;
    const Loaded = loaded;
    return Loaded ? <Loaded {...props} /> : null;
  }
  return LazyPage as unknown as M[K];
}
