// Node's `http` (client side) over the host HTTP bridge.
import { clientModule } from "./httpClient.js";

export default clientModule("http:");
