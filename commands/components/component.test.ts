import { given } from "../testing.js";
import { component, type ComponentSaved } from "./component.js";
import { saveComponent } from "./save.js";

const saved: ComponentSaved = {
  type: "ComponentSaved",
  data: {
    id: "sc_1", ownerId: "u_1", key: "k", name: "N", version: "0.1.0", type: "source", description: null,
    code: "export default {}", codeHash: "ab", url: null, configurableProps: [], meta: {}, at: 1,
  },
};

describe("commands/components", () => {
  it("saves once; saved code never changes", () => {
    given(component).when(saveComponent, saved.data).then([saved]);
    given(component, saved).when(saveComponent, saved.data).thenRejected("component_exists", 409);
  });
});
