import { given } from "../testing.js";
import { component, REGISTRY_OWNER, type ComponentSaved } from "./component.js";

const saved: ComponentSaved = {
  type: "ComponentSaved",
  data: {
    id: "sc_1",
    ownerId: "u_1",
    key: "k",
    name: "N",
    version: "0.1.0",
    type: "source",
    description: null,
    code: "export default {}",
    codeHash: "ab",
    url: null,
    configurableProps: [],
    meta: {},
    at: 1,
  },
};
const published: ComponentSaved = {
  type: "ComponentSaved",
  data: { ...saved.data, ownerId: REGISTRY_OWNER, key: "http-new-requests", version: "1.0.0" },
};
const publish = (data: Partial<ComponentSaved["data"]> = {}) => ({
  type: "PublishComponent" as const,
  data: { ...published.data, ...data },
});

describe("commands/components", () => {
  it("saves once; saved code never changes", () => {
    given(component).when({ type: "SaveComponent", data: saved.data }).then([saved]);
    given(component, saved).when({ type: "SaveComponent", data: saved.data }).thenRejected("already_exists");
  });
  it("registry components are published, not saved", () => {
    given(component)
      .when({ type: "SaveComponent", data: published.data })
      .thenRejected("invalid_request", /published/);
  });
  it("publishes with a key like app_slug-name and a semantic version", () => {
    given(component).when(publish()).then([published]);
    given(component)
      .when(publish({ key: null }))
      .thenRejected("invalid_component", /needs a key/);
    given(component)
      .when(publish({ key: "NoDash" }))
      .thenRejected("invalid_component", /app_slug-slugified-name/);
    given(component)
      .when(publish({ version: "1.0" }))
      .thenRejected("invalid_component", /semantic version/);
    given(component, published).when(publish()).thenRejected("already_exists");
  });
});
