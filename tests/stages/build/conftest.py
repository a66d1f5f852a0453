from tests.stages.build.engine_fixtures import built_images, docker_client, docker_host  # noqa: F401
