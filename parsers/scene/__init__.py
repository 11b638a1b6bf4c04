"""Scene parser: torchvision Mask R-CNN detections and a ResNet attribute head -> SceneLikelihoods."""
