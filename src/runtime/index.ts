// Public surface of the component runtime library (see README.md in this folder).
export { prepareComponent, codeHash, type PrepareInput, type PrepareOptions } from "./component/prepare.js";
export { validateDescription, validateAdditionalProps, PROP_TYPES } from "./component/validate.js";
export { configurableProps } from "./component/configurableProps.js";
export { NpmCache, NpmInstallError, type InstalledPackage } from "./component/npmCache.js";
export { httpModuleLoader, type ModuleLoader } from "./component/moduleSource.js";
export { parseNpmSpecifier } from "./component/specifier.js";
export { Runtime, RuntimeClosedError, InvalidInvocationError } from "./sandbox/runtime.js";
export { ComponentValidationError, type Problem } from "./errors.js";
export { DEFAULT_LIMITS, defaultWorkerCount, type RuntimeOptions, type SandboxLimits } from "./config.js";
export type * from "./types.js";
