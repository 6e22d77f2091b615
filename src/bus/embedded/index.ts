export { openEmbeddedBus, type EmbeddedBusOptions } from "./embeddedBus.js";
