import { given } from "../testing.js";
import { source, type SourceDeployed } from "./source.js";
import { deploySource } from "./deploy.js";
import { updateSource } from "./update.js";
import { deleteSource } from "./delete.js";

const deployed: SourceDeployed = {
  type: "SourceDeployed",
  data: {
    id: "dc_1", ownerId: "u_1", creatorId: "u_1", componentId: "sc_1", name: "My Source", nameSlug: "my-source",
    endpointId: "e1", configuredProps: { n: 1 }, active: true, at: 10,
  },
};
const update = { id: "dc_1", componentId: "sc_2", name: "Renamed", nameSlug: "renamed", configuredProps: {}, active: false, at: 11 };

describe("commands/sources", () => {
  it("deploys once", () => {
    given(source).when(deploySource, deployed.data).then([deployed]);
    given(source, deployed).when(deploySource, deployed.data).thenRejected("source_exists", 409);
  });
  it("updates a deployed source, keeping its id", () => {
    given(source, deployed).when(updateSource, update).then([{ type: "SourceUpdated", data: update }]);
  });
  it("cannot update an unknown or deleted source", () => {
    given(source).when(updateSource, update).thenRejected("not_found", 404);
    given(source, deployed, { type: "SourceDeleted", data: { id: "dc_1", ownerId: "u_1", nameSlug: "my-source", at: 12 } })
      .when(updateSource, update).thenRejected("not_found", 404);
  });
  it("deletes once, releasing its slug", () => {
    given(source, deployed).when(deleteSource, { id: "dc_1", at: 12 })
      .then([{ type: "SourceDeleted", data: { id: "dc_1", ownerId: "u_1", nameSlug: "my-source", at: 12 } }]);
    given(source, deployed, { type: "SourceDeleted", data: { id: "dc_1", ownerId: "u_1", nameSlug: "my-source", at: 12 } })
      .when(deleteSource, { id: "dc_1", at: 13 }).thenRejected("not_found", 404);
  });
});
