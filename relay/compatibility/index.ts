export { checkStack, refusalReasons, type Compatibility, type CompatibilityCheck, type MachineBudget, type StackPlan } from "./stack-rules.js";
export { MODEL_CATALOG, findCatalogModel, type CatalogModel } from "./model-catalog.js";
export { UNKNOWN_MODEL, kvBytesPerToken, type ModelFacts } from "./model-facts.js";
