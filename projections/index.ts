import type { Projection } from "../src/projector/projection.js";
import { usersProjection } from "./users.js";
import { orgsProjection } from "./orgs.js";
import { apiKeysProjection } from "./apiKeys.js";
import { usageProjection } from "./usage.js";

/** Every read model a node keeps. */
export const allProjections: readonly Projection[] = [usersProjection, orgsProjection, apiKeysProjection, usageProjection];
