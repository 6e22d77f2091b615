// configurable_props in the seed's Component shape, from the normalized props.
import type { ConfigurableProp, NormalizedProp, PropOption } from "../types.js";

export function configurableProps(props: readonly NormalizedProp[]): ConfigurableProp[] {
  return props.map((p) => {
    const out: ConfigurableProp = { name: p.name, type: p.type };
    if (p.label !== undefined) out.label = p.label;
    if (p.description !== undefined) out.description = p.description;
    if (p.default !== undefined) out.default = p.default;
    if (p.app !== undefined) out.app = p.app;
    if (p.optional) out.optional = true;
    if (p.secret) out.secret = true;
    if (p.min !== undefined) out.min = p.min;
    if (p.max !== undefined) out.max = p.max;
    if (Array.isArray(p.options)) out.options = [...(p.options as readonly PropOption[])];
    if (p.options === "dynamic") out.remoteOptions = true;
    if (p.reloadProps) out.reloadProps = true;
    if (p.withLabel) out.withLabel = true;
    if (p.type === "$.interface.http" && p.customResponse === true) out.customResponse = true;
    return out;
  });
}
