export { openKafkaBus, ConsumerJoinError, type KafkaBusOptions } from "./kafkaBus.js";
