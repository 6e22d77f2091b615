// Node's `https` (client side) over the host HTTP bridge; TLS is the host's.
import { clientModule } from "./httpClient.js";

export default clientModule("https:");
