// Node's `fs/promises`, limited to the run's /tmp (see fs.ts).
import { fsPromises } from "./fs.js";

export default fsPromises;
